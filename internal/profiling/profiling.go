// Package profiling serves Go's runtime profiles (net/http/pprof) on a
// listener of their own: herald serve's --pprof, and the bench's baseline
// forwarder's, so that both are profiled the same way.
package profiling

import (
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Serve answers /debug/pprof/ (the index, cmdline, profile, symbol and
// trace) on ln until ln closes, and returns why it stopped. No write
// timeout (a profile streams for as long as it was asked to); a request's
// headers must arrive within 10 s, and idle connections close after idle.
func Serve(ln net.Listener, idle time.Duration) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle}).Serve(ln)
}
