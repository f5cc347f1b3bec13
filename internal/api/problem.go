package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// Problem is an RFC 9457 problem document. Validation problems name the
// offending field in Field (a JSON path such as "retry_policy.max_attempts",
// "events[2].source" or a query parameter's name).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

// Problem types.
const (
	probValidation  = "urn:herald:problem:validation"
	probDestination = "urn:herald:problem:destination-blocked"
	probNotFound    = "urn:herald:problem:not-found"
	probConflict    = "urn:herald:problem:conflict"
	probTooLarge    = "urn:herald:problem:payload-too-large"
	probLimit       = "urn:herald:problem:limit-reached"
	probMediaType   = "urn:herald:problem:unsupported-media-type"
	probUnavailable = "urn:herald:problem:unavailable"
	probTimeout     = "urn:herald:problem:request-timeout"
	probInternal    = "urn:herald:problem:internal"
)

func writeProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// invalid answers 400 naming the field.
func invalid(w http.ResponseWriter, field, detail string) {
	writeProblem(w, Problem{Type: probValidation, Title: "Invalid request", Status: http.StatusBadRequest, Field: field, Detail: detail})
}

// unprocessable answers 422 naming the field: a well-formed request Herald
// will not carry out as configured (a subscription URL whose destination is
// refused).
func unprocessable(w http.ResponseWriter, field, detail string) {
	writeProblem(w, Problem{Type: probDestination, Title: "Destination not allowed", Status: http.StatusUnprocessableEntity, Field: field, Detail: detail})
}

// unprocessableInput answers 422 naming the field: values each valid that
// do not go together.
func unprocessableInput(w http.ResponseWriter, field, detail string) {
	writeProblem(w, Problem{Type: probValidation, Title: "Unprocessable request", Status: http.StatusUnprocessableEntity, Field: field, Detail: detail})
}

func notFound(w http.ResponseWriter, what string) {
	writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: what + " not found"})
}

func conflict(w http.ResponseWriter, field, detail string) {
	writeProblem(w, Problem{Type: probConflict, Title: "Conflict", Status: http.StatusConflict, Field: field, Detail: detail})
}

// unavailable answers 503 with Retry-After: store.RetryAfter, the one
// wait Herald asks of a client for any refusal that passes by itself (the
// store away, too many waiting consumers, subscriptions changing under a
// publish).
func unavailable(w http.ResponseWriter, detail string) {
	w.Header().Set("Retry-After", retryAfter)
	writeProblem(w, Problem{Type: probUnavailable, Title: "Service unavailable", Status: http.StatusServiceUnavailable, Detail: detail})
}

// retryAfter is store.RetryAfter in whole seconds, as Retry-After says it.
var retryAfter = strconv.Itoa(int(store.RetryAfter / time.Second))

// storeUnavailable is unavailable's detail for a store that is away
// (store.ErrUnavailable, store.ErrClosed, a call that ran out of time).
const storeUnavailable = "the store is unavailable (its database is away or its disk full); retry after Retry-After seconds"

func internalError(w http.ResponseWriter) {
	writeProblem(w, Problem{Type: probInternal, Title: "Internal error", Status: http.StatusInternalServerError, Detail: "see the server log"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}
