package api

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ingest"
)

// publish accepts one or many CloudEvents (structured, batch, binary or
// plain JSON; see openapi.yaml) and answers 202 once
// they and their deliveries are durably committed. A batch with one bad event
// is rejected whole; bodies over 1 MiB get 413.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, event.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge,
				Detail: "a publish request must be at most " + strconv.Itoa(event.MaxBodyBytes) + " bytes"})
			return
		}
		invalid(w, "body", "could not read the body")
		return
	}
	// An Event Grid event without a topic gets its account as its source.
	evs, err := event.ParseWith(r.Header, body, event.ParseOptions{DefaultSource: "/accounts/" + accountOf(r)})
	if err != nil {
		var fe *event.FieldError
		switch {
		case errors.Is(err, event.ErrUnsupportedMediaType):
			writeProblem(w, Problem{Type: probMediaType, Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
				Field: "content-type", Detail: err.Error()})
		case errors.As(err, &fe):
			invalid(w, fe.Field, fe.Detail)
		default:
			invalid(w, "body", err.Error())
		}
		return
	}
	res, err := s.Publisher.Publish(r.Context(), accountOf(r), evs)
	if err != nil {
		s.storeError(w, r, err, "event")
		return
	}
	dups := 0
	for _, x := range res {
		if x.Duplicate {
			dups++
		}
	}
	s.published.WithLabelValues("false").Add(float64(len(res) - dups))
	s.published.WithLabelValues("true").Add(float64(dups))
	writeJSON(w, http.StatusAccepted, struct {
		Events []ingest.Result `json:"events"`
	}{res})
}
