package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// logLines decodes a JSON log.
func logLines(t *testing.T, log *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRequestLogLevels: each request is a line at debug, except a 5xx
// answer but 503 (a panic's among them), a line at warn; at info only those
// show. A 503 is a line at debug and, the first, a refusal line at warn
// (refusalLog; refusals_test.go).
func TestRequestLogLevels(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("/failing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/refusing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/panicking", func(http.ResponseWriter, *http.Request) { panic("a bug") })
	paths := []string{"/ok", "/missing", "/failing", "/refusing", "/panicking"}
	wantLevel := map[string]string{"/ok": "DEBUG", "/missing": "DEBUG", "/failing": "WARN", "/refusing": "DEBUG", "/panicking": "WARN"}

	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		// The handler serializes writes; the log is read once srv.Close
		// has waited for every request.
		logs := &bytes.Buffer{}
		s := &Server{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level}))}
		srv := httptest.NewServer(s.logRequests(s.recoverer(mux)))
		for _, p := range paths {
			resp, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		srv.Close()
		got := map[string]string{}
		panics, refusals := 0, 0
		for _, m := range logLines(t, logs) {
			switch m["msg"] {
			case "request":
				got[m["path"].(string)] = m["level"].(string)
			case "handler panic":
				panics++
			case refusedLine:
				refusals++
			}
		}
		for _, p := range paths {
			want := wantLevel[p]
			if level == slog.LevelInfo && want == "DEBUG" {
				want = "" // not logged
			}
			if got[p] != want {
				t.Errorf("at %v, GET %s: request line at %q, want %q", level, p, got[p], want)
			}
		}
		if panics != 1 || refusals != 1 {
			t.Errorf("at %v: %d panic lines and %d refusal lines, want 1 of each", level, panics, refusals)
		}
	}
}
