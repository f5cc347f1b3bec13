package api

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// logRequests logs one line per request: method, path, the names of the
// query parameters (not their values), status, duration (wall time), the
// body bytes sent, and the remote address. It is at debug (--log-level
// debug), except for a 5xx answer but 503, at warn (the cause is logged at
// error beside it: a store error, a handler panic). 503 answers are
// counted by refusalLog, which writes their warn lines, coalesced. No header and no query value
// is logged, so nothing secret is. Requests net/http refuses before any
// handler runs are logged by HTTPServer's connections, at debug.
func (s *Server) logRequests(h http.Handler) http.Handler {
	refusals := &refusalLog{log: s.Logger, clock: s.Clock}
	if refusals.clock == nil {
		refusals.clock = clock.Real{}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Logger.Enabled(r.Context(), requestLevel(http.StatusInternalServerError)) {
			h.ServeHTTP(w, r)
			return
		}
		began := time.Now()
		rw := &recordingWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		switch status := rw.statusCode(); {
		case status == http.StatusServiceUnavailable:
			refusals.refused(r)
		case status >= 200 && status < 300 && answersAgain(r):
			refusals.answered(r)
		}
		level := requestLevel(rw.statusCode())
		if !s.Logger.Enabled(r.Context(), level) {
			return
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path)}
		if names := queryNames(r); names != "" {
			attrs = append(attrs, slog.String("query", names))
		}
		attrs = append(attrs, slog.Int("status", rw.statusCode()), slog.Duration("duration", time.Since(began)),
			slog.Int64("bytes", rw.bytes), slog.String("remote", r.RemoteAddr))
		s.Logger.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// requestLevel is the level of a request's line by its answer's status:
// warn for a 5xx (Herald failed) but 503, debug for the rest. A 503 is a
// refusal that passes by itself (the store away): refusalLog writes its
// warn lines, coalesced.
func requestLevel(status int) slog.Level {
	if status >= 500 && status != http.StatusServiceUnavailable {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// queryNames returns the query's parameter names, sorted, without repeats,
// comma-separated.
func queryNames(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	var names []string
	for name := range r.URL.Query() {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// recordingWriter notes the status and counts the body bytes written.
type recordingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusCode is the status sent: 200 when the handler set none.
func (w *recordingWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
