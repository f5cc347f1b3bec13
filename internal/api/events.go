package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/tracing"
)

// publish accepts one or many CloudEvents (structured, batch, binary or
// plain JSON; see openapi.yaml) and answers 202 once
// they and their deliveries are durably committed. A batch with one bad event
// is rejected whole; bodies over 1 MiB get 413, and so do events that would
// make more deliveries together than the Publisher allows (admission.FanoutError)
// or whose matching would cost more filter tests (filter.WorkError), or
// whose check against their schemas more schema tests (eventtype.WorkError).
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	res, ok := s.publishRequest(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusAccepted, struct {
		Events []admission.Result `json:"events"`
	}{res})
}

// publishRequest reads, parses and publishes the events of a publish
// request in the request's account (every format event.ParseWith reads)
// and counts them: the publish path of both APIs (this one and
// eventgrid.go's). The publish stops (matching within
// filter.CheckEvery tests) when the client goes or PublishTimeout after
// the handler began. On a problem it answers and returns false; nothing
// was stored then (but for a 503 at the deadline, which cannot say).
func (s *Server) publishRequest(w http.ResponseWriter, r *http.Request) ([]admission.Result, bool) {
	deadline := time.Now().Add(s.publishTimeout())
	body, err := readBody(w, r, event.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge,
				Detail: "a publish request must be at most " + strconv.Itoa(event.MaxBodyBytes) + " bytes"})
			return nil, false
		}
		bodyReadFailed(w, err, "could not read the body")
		return nil, false
	}
	// An Event Grid event without a topic gets its account as its source.
	evs, err := event.ParseWith(r.Header, body, event.ParseOptions{DefaultSource: "/accounts/" + accountOf(r)})
	if err != nil {
		var fe *event.FieldError
		switch {
		case errors.Is(err, event.ErrUnsupportedMediaType) && errors.As(err, &fe):
			writeProblem(w, Problem{Type: probMediaType, Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
				Field: "content-type", Detail: fe.Detail})
		case errors.As(err, &fe):
			invalid(w, fe.Field, fe.Detail)
		default:
			invalid(w, "body", err.Error())
		}
		return nil, false
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	if s.Tracing {
		ctx = tracing.WithRequest(ctx, r.Header)
	}
	res, err := s.Publisher.Publish(ctx, accountOf(r), evs)
	if rf := (*eventtype.Refusal)(nil); errors.As(err, &rf) {
		invalid(w, rf.Field, rf.Detail)
		return nil, false
	}
	if fe := (*admission.FanoutError)(nil); errors.As(err, &fe) {
		writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge,
			Detail: "the events would make more than " + strconv.Itoa(fe.Limit) + " deliveries, the most one publish request may make " +
				"(the server's --max-fanout); nothing was stored: publish fewer events a request"})
		return nil, false
	}
	if we := (*filter.WorkError)(nil); errors.As(err, &we) {
		writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge,
			Detail: "matching the events against the account's subscriptions would cost more than " + strconv.Itoa(we.Limit) +
				" filter tests, the most one publish request may cost (the server's --max-match-work); nothing was stored: " +
				"publish fewer or smaller events a request, or filter on smaller values"})
		return nil, false
	}
	if we := (*eventtype.WorkError)(nil); errors.As(err, &we) {
		writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge,
			Detail: "checking the events against their types' schemas would cost more than " + strconv.Itoa(we.Limit) +
				" schema tests, the most one publish request may cost (the server's --max-schema-work); nothing was stored: " +
				"publish fewer or smaller events a request"})
		return nil, false
	}
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		unavailable(w, "the publish did not finish within "+s.publishTimeout().String()+", its deadline; "+
			"it may not have been stored: publish it again (a duplicate is recognized)")
		return nil, false
	}
	if err != nil {
		s.storeError(w, r, err, "event")
		return nil, false
	}
	dups := 0
	for _, x := range res {
		if x.Duplicate {
			dups++
		}
	}
	s.published.WithLabelValues("false").Add(float64(len(res) - dups))
	s.published.WithLabelValues("true").Add(float64(dups))
	return res, true
}

// PublishTimeout bounds a publish request, from the start of its handler
// (about the end of its header): the publish stops then and answers 503,
// a few seconds before WriteTimeout, so that the answer still reaches the
// client.
const PublishTimeout = WriteTimeout - 5*time.Second

func (s *Server) publishTimeout() time.Duration {
	if s.PublishTimeout > 0 {
		return s.PublishTimeout
	}
	return PublishTimeout
}

// readBody reads r's body, at most limit bytes (more: an
// *http.MaxBytesError). A body whose length the request states is read into
// one buffer of that size, not grown by doubling as io.ReadAll does (which
// cost a publish of 100 events about 2.5 times its size in garbage).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		var buf bytes.Buffer
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom grows when less than MinRead is free
		_, err := buf.ReadFrom(rd)
		return buf.Bytes(), err
	}
	return io.ReadAll(rd)
}
