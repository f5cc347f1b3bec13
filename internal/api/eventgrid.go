package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/store"
)

// Azure Event Grid's API, as Azure's own clients call it (the azeventgrid
// and aznamespaces SDKs unchanged but for the endpoint and the key): a
// topic's publishing endpoint, POST /api/events, and a namespace's topics
// and their subscriptions' queues, /topics/{topic}:publish and
// /topics/{topic}/eventsubscriptions/{subscription}:receive (…). They are
// routes of the route table (server.go) like any other, on the same
// publish path and queue as /v1; what differs is in this file and
// eventgrid_queue.go: where the key is, how errors look, and the bodies.

// isEventGridPath reports whether a request's path is one of Event Grid's
// routes (or under /topics/, where a mistyped one is): eventGridForm
// serves it.
func isEventGridPath(p string) bool { return p == "/api/events" || strings.HasPrefix(p, "/topics/") }

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

// inTopic runs h, for a route of topicPublish or topicAccount access, in
// the account its path's {topic} names (topicAccount); other routes' h
// as it is.
func (s *Server) inTopic(rt route, h http.Handler) http.Handler {
	if rt.access != topicPublish && rt.access != topicAccount {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := callerOf(r)
		id, ok := s.topicAccount(w, r, c.Principal)
		if !ok {
			return
		}
		c.Account = id
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// maxTopicPages bounds the pages of accounts (store.MaxLimit each) an
// admin's topic named by an account's name is looked for in.
const maxTopicPages = 100

// topicAccount returns the account the path's {topic} names, by its id or
// its name, for a caller with principal p: an admin key reaches any
// account, another key its own only. A topic it does not reach is 404, as
// an absent one is; a name several accounts share is 409.
func (s *Server) topicAccount(w http.ResponseWriter, r *http.Request, p auth.Principal) (string, bool) {
	topic := r.PathValue("topic")
	if p.Role != account.RoleAdmin {
		own, err := s.account(r.Context(), p.AccountID)
		if err != nil {
			s.storeError(w, r, err, "account")
			return "", false
		}
		if topic != own.ID && topic != own.Name {
			topicNotFound(w, "topic "+quoteHeader(topic)+" not found: a key reaches its own account's topic alone, named by the account's id or name")
			return "", false
		}
		return own.ID, true
	}
	if accountIDs.fits(topic) {
		a, err := s.account(r.Context(), topic)
		if errors.Is(err, store.ErrNotFound) {
			topicNotFound(w, "topic "+quoteHeader(topic)+" not found: no account has this id")
			return "", false
		} else if err != nil {
			s.storeError(w, r, err, "account")
			return "", false
		}
		return a.ID, true
	}
	return s.accountNamed(w, r, topic)
}

// accountNamed returns the id of the one account named name, looked for in
// at most maxTopicPages pages of accounts.
func (s *Server) accountNamed(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	var found []string
	page := store.Page{Limit: store.MaxLimit}
	for range maxTopicPages {
		as, next, err := s.Store.ListAccounts(r.Context(), page)
		if err != nil {
			s.storeError(w, r, err, "account")
			return "", false
		}
		for _, a := range as {
			if a.Name == name {
				found = append(found, a.ID)
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	switch len(found) {
	case 0:
		topicNotFound(w, "topic "+quoteHeader(name)+" not found: no account has this id or name")
		return "", false
	case 1:
		return found[0], true
	}
	conflict(w, "topic", "the name "+quoteHeader(name)+" is the name of "+strings.Join(found, ", ")+": name the topic by the account's id")
	return "", false
}

func topicNotFound(w http.ResponseWriter, detail string) {
	writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "topic", Detail: detail})
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

// publishToTopic is a namespace topic's publish, POST
// /topics/{topic}:publish: one CloudEvent or a batch, published in the
// topic's account, answered 200 {}.
func (s *Server) publishToTopic(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.publishRequest(w, r); ok {
		writeJSON(w, http.StatusOK, struct{}{})
	}
}
