package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// TestRefusalLogCoalesces: 500 requests refused (503) within one interval
// write one warn line (the first, at once) and 500 request lines at debug;
// a refusal RefusalLogInterval later writes one line counting the 501 since
// the first line; 2xx answers of routes that answer without the store
// (healthz) end nothing; the first 2xx of a route that needs it writes one
// info line counting the 502 refusals of the outage, and the next refusal
// after a quiet interval is a warn line at once again.
func TestRefusalLogCoalesces(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	logs := &bytes.Buffer{}
	var away atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/subscriptions", func(w http.ResponseWriter, _ *http.Request) {
		if away.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/healthz", func(http.ResponseWriter, *http.Request) {})
	s := &Server{Clock: clk, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	srv := httptest.NewServer(s.logRequests(mux))
	defer srv.Close()
	get := func(path string, n int) {
		for range n {
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	count := func(msg, level string) (n int, last map[string]any) {
		for _, m := range logLines(t, logs) {
			if m["msg"] == msg && m["level"] == level {
				n, last = n+1, m
			}
		}
		return n, last
	}
	want := func(what, msg, level string, lines int, refused float64) {
		t.Helper()
		n, last := count(msg, level)
		if n != lines || (lines > 0 && last["refused"] != refused) {
			t.Fatalf("%s: %d %s lines %q, the last %v; want %d, the last refused=%v", what, n, level, msg, last, lines, refused)
		}
	}

	away.Store(true)
	get("/v1/subscriptions", 500)
	want("500 refusals", refusedLine, "WARN", 1, 1)
	if n, _ := count("request", "DEBUG"); n != 500 {
		t.Fatalf("500 refusals: %d request lines at debug, want 500", n)
	}
	clk.Advance(RefusalLogInterval - time.Millisecond)
	get("/v1/subscriptions", 1)
	want("a refusal within the interval", refusedLine, "WARN", 1, 1)
	clk.Advance(time.Millisecond)
	get("/v1/subscriptions", 1)
	want("a refusal an interval later", refusedLine, "WARN", 2, 501)
	get("/healthz", 3)
	want("healthz answering", backLine, "INFO", 0, 0)

	away.Store(false)
	get("/v1/subscriptions", 3)
	want("the store back", backLine, "INFO", 1, 502)
	want("the store back", refusedLine, "WARN", 2, 501)
	if n, _ := count("request", "WARN"); n != 0 {
		t.Fatalf("%d request lines at warn, want none", n)
	}

	away.Store(true)
	clk.Advance(RefusalLogInterval)
	get("/v1/subscriptions", 2)
	want("a second outage", refusedLine, "WARN", 3, 1)
}
