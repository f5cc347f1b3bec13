package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
)

// Broker sources (docs/sources.md): admin keys only, in any account
// (account_id in the body).

// sourceJSON is the source resource: its connection as Herald shows it
// (secrets masked: broker.Settings.Shown), what it reads, and its consumers'
// report.
type sourceJSON struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Type      string       `json:"type"`
	AccountID string       `json:"account_id"`
	URL       string       `json:"url,omitempty"`
	Brokers   []string     `json:"brokers,omitempty"`
	TLS       *broker.TLS  `json:"tls,omitempty"`
	SASL      *broker.SASL `json:"sasl,omitempty"`
	Subject   string       `json:"subject,omitempty"`
	Stream    string       `json:"stream,omitempty"`
	Durable   string       `json:"durable,omitempty"`
	Queue     string       `json:"queue,omitempty"`
	Topic     string       `json:"topic,omitempty"`
	Format    string       `json:"format"`
	Wrap      *source.Wrap `json:"wrap,omitempty"`
	State     string       `json:"state"`
	// Lag is null when the broker does not tell it.
	Lag         *int64       `json:"lag"`
	LastError   *string      `json:"last_error"`
	LastErrorAt *Time        `json:"last_error_at"`
	Counts      sourceCounts `json:"counts"`
	CreatedAt   Time         `json:"created_at"`
	UpdatedAt   Time         `json:"updated_at"`
}

type sourceCounts struct {
	Received     int64 `json:"received"`
	Published    int64 `json:"published"`
	Duplicates   int64 `json:"duplicates"`
	DeadLettered int64 `json:"dead_lettered"`
}

func toSourceJSON(s source.Source) sourceJSON {
	c, st := s.Config, s.Status
	conn := c.Conn.Shown()
	out := sourceJSON{ID: s.ID, Name: s.Name, Type: s.Type, AccountID: s.AccountID, URL: conn.URL, Brokers: conn.Brokers,
		TLS: conn.TLS, SASL: conn.SASL, Subject: c.Subject, Stream: c.Stream, Durable: c.Durable, Queue: c.Queue, Topic: c.Topic,
		Format: c.Format, Wrap: c.Wrap, State: s.State(), LastErrorAt: optTime(st.LastErrorAt),
		Counts:    sourceCounts{Received: st.Received, Published: st.Published, Duplicates: st.Duplicates, DeadLettered: st.DeadLettered},
		CreatedAt: timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt)}
	if st.Lag >= 0 {
		out.Lag = &st.Lag
	}
	if st.LastError != "" {
		e := redact.Text(st.LastError)
		out.LastError = &e
	}
	return out
}

// sourceDeadLetterJSON is a source's dead letter: the message's body (its
// first source.MaxDeadLetterBody bytes, base64) and why it was not
// published.
type sourceDeadLetterJSON struct {
	ID         string `json:"id"`
	SourceID   string `json:"source_id"`
	MessageID  string `json:"message_id"`
	Reason     string `json:"reason"`
	BodyBase64 []byte `json:"body_base64"`
	Size       int64  `json:"size"`
	Truncated  bool   `json:"truncated"`
	ReceivedAt Time   `json:"received_at"`
}

func toSourceDeadLetterJSON(dl source.DeadLetter) sourceDeadLetterJSON {
	return sourceDeadLetterJSON{ID: dl.ID, SourceID: dl.SourceID, MessageID: dl.MessageID, Reason: dl.Reason, BodyBase64: dl.Body,
		Size: dl.Size, Truncated: int64(len(dl.Body)) < dl.Size, ReceivedAt: timestamp(dl.ReceivedAt)}
}

func (s *Server) createSource(w http.ResponseWriter, r *http.Request) {
	var in source.Input
	if !decodeBody(w, r, &in) {
		return
	}
	src, err := s.Sources.Create(r.Context(), in)
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sources/"+src.ID)
	writeJSON(w, http.StatusCreated, toSourceJSON(src))
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	srcs, next, err := s.Store.ListSources(r.Context(), p)
	if err != nil {
		s.storeError(w, r, err, "source")
		return
	}
	writeList(w, srcs, next, toSourceJSON)
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request) {
	src, err := s.Store.GetSource(r.Context(), r.PathValue("id"))
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSourceJSON(src))
}

func (s *Server) updateSource(w http.ResponseWriter, r *http.Request) {
	var in source.Input
	if !decodeBody(w, r, &in) {
		return
	}
	src, err := s.Sources.Update(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSourceJSON(src))
}

// pauseSource returns the handler that pauses (true) or resumes a source:
// its consumer stops, or starts again where the broker kept its place.
func (s *Server) pauseSource(paused bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src, err := s.Sources.SetPaused(r.Context(), r.PathValue("id"), paused)
		if err != nil {
			s.sourceError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, toSourceJSON(src))
	})
}

func (s *Server) deleteSource(w http.ResponseWriter, r *http.Request) {
	if err := s.Sources.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.sourceError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSourceDeadLetters(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.Store.GetSource(r.Context(), id); err != nil {
		s.sourceError(w, r, err)
		return
	}
	dls, next, err := s.Store.ListSourceDeadLetters(r.Context(), id, p)
	if err != nil {
		s.storeError(w, r, err, "source")
		return
	}
	writeList(w, dls, next, toSourceDeadLetterJSON)
}

// sourceError answers a source write's or read's error.
func (s *Server) sourceError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case inputProblem(w, err):
	case errors.Is(err, store.ErrNameTaken):
		conflict(w, "name", "a source of this account has this name")
	case errors.Is(err, store.ErrSourceLimit):
		writeProblem(w, Problem{Type: probLimit, Title: "Limit reached", Status: http.StatusConflict,
			Detail: "the installation holds " + strconv.Itoa(source.MaxSources) + " sources, the most it may hold"})
	default:
		s.storeError(w, r, err, "source")
	}
}
