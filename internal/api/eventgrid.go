package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/herald-events/herald/internal/auth"
)

// Azure Event Grid's API, as Azure's own clients call it (the azeventgrid
// SDK unchanged but for the endpoint and the key): a topic's publishing
// endpoint, POST /api/events. It is a route of the route table (server.go)
// like any other, on the same publish path as /v1; what differs is in this
// file: where the key is, how errors look, and the bodies.

// isEventGridPath reports whether a request's path is one of Event Grid's
// routes: eventGridForm serves it.
func isEventGridPath(p string) bool { return p == "/api/events" }

// eventGridForm gives the requests of Event Grid's paths Event Grid's forms
// before any route sees them, and their errors Event Grid's shape after:
//
//   - the key may come in an aeg-sas-key header or as Authorization:
//     SharedAccessKey <key> (as well as Bearer): it is passed on as the
//     bearer key authorize reads;
//   - an error answer, whoever wrote it (authorize, guard, checkParams, the
//     handler), is {"error": {"code", "message"}}: the code from its status
//     (BadRequest, Unauthorized, NotFound, …), the message its detail, after
//     the field or parameter it names.
func eventGridForm(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isEventGridPath(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		if key := eventGridKey(r.Header); key != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+key)
		}
		ew := &eventGridWriter{ResponseWriter: w}
		h.ServeHTTP(ew, r)
		ew.finish()
	})
}

// eventGridKey returns the key of an aeg-sas-key header or of an
// Authorization: SharedAccessKey header, when the request has no bearer
// key; "" otherwise.
func eventGridKey(h http.Header) string {
	authz := h.Get("Authorization")
	if auth.BearerKey(authz) != "" {
		return ""
	}
	if scheme, key, ok := strings.Cut(authz, " "); ok && strings.EqualFold(scheme, "SharedAccessKey") {
		return strings.TrimSpace(key)
	}
	return strings.TrimSpace(h.Get("aeg-sas-key"))
}

// maxHeldProblem bounds the problem document eventGridWriter holds to
// rewrite: Herald's are a few hundred bytes.
const maxHeldProblem = 64 << 10

// eventGridWriter holds a problem document written to it and writes it
// again, at finish, as Event Grid's error body; any other answer passes.
type eventGridWriter struct {
	http.ResponseWriter
	status int // of the problem held; 0: none
	held   bytes.Buffer
}

func (w *eventGridWriter) WriteHeader(code int) {
	if w.status == 0 && w.Header().Get("Content-Type") == "application/problem+json" {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *eventGridWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		return w.ResponseWriter.Write(p)
	}
	if room := maxHeldProblem - w.held.Len(); room > 0 {
		w.held.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Unwrap lets http.ResponseController reach the connection (a receive's
// long poll moves its write deadline).
func (w *eventGridWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// eventGridError is Event Grid's error body.
type eventGridError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (w *eventGridWriter) finish() {
	if w.status == 0 {
		return
	}
	var p Problem
	_ = json.Unmarshal(w.held.Bytes(), &p)
	var out eventGridError
	out.Error.Code = strings.ReplaceAll(http.StatusText(w.status), " ", "")
	out.Error.Message = p.Detail
	if p.Detail == "" {
		out.Error.Message = p.Title
	}
	if p.Field != "" && !strings.HasPrefix(out.Error.Message, p.Field) {
		out.Error.Message = p.Field + ": " + out.Error.Message
	}
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(w.status)
	_ = json.NewEncoder(w.ResponseWriter).Encode(out)
}

// publishEventGrid is an Event Grid topic's endpoint, POST /api/events:
// Event Grid events (application/json) or CloudEvents, published as POST
// /v1/events publishes them, answered 200 with no body.
func (s *Server) publishEventGrid(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.publishRequest(w, r); ok {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	}
}
