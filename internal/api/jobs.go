package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// jobJSON is a job as the API shows it (GET /v1/jobs/{id}).
type jobJSON struct {
	ID             string    `json:"id"`
	Kind           job.Kind  `json:"kind"`
	State          job.State `json:"state"`
	SubscriptionID string    `json:"subscription_id"`
	Since          Time      `json:"since"`
	Until          *Time     `json:"until"`
	Statuses       []string  `json:"statuses"`
	Total          int       `json:"total"`
	Done           int       `json:"done"`
	Errors         int       `json:"errors"`
	Error          string    `json:"error,omitempty"`
	CreatedAt      Time      `json:"created_at"`
	FinishedAt     *Time     `json:"finished_at"`
}

func toJobJSON(j job.Job) jobJSON {
	statuses := make([]string, len(j.Statuses))
	for i, st := range j.Statuses {
		statuses[i] = string(st)
	}
	return jobJSON{ID: j.ID, Kind: j.Kind, State: j.State, SubscriptionID: j.SubscriptionID,
		Since: timestamp(j.Since), Until: optTime(j.Until), Statuses: statuses,
		Total: j.Total, Done: j.Done, Errors: j.Errors, Error: j.Error,
		CreatedAt: timestamp(j.CreatedAt), FinishedAt: optTime(j.FinishedAt)}
}

// recoverSubscription starts a recover of the subscription's failed
// deliveries in a time range (job.RecoverRequest): 202 with the job, which
// the job runner works in batches. Bad input is refused naming the field,
// an account with --max-jobs-per-account jobs running or waiting with 429
// (jobLimitReached), and no job is made.
func (s *Server) recoverSubscription(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	var in job.RecoverRequest
	if !decodeBody(w, r, &in) {
		return
	}
	j, perr := in.Recover(account.OrDefault(sub.AccountID), sub.ID)
	if perr != nil {
		invalid(w, perr.Field, perr.Detail)
		return
	}
	j, err := s.Control.Recover(r.Context(), j)
	if le := (*store.JobLimitError)(nil); errors.As(err, &le) {
		jobLimitReached(w, le.Limit)
		return
	} else if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, toJobJSON(j))
}

// jobLimitReached answers 429 with Retry-After (the wait of every refusal
// that passes by itself: retryAfter) for a recover of an account that has
// limit jobs running or waiting: one must end first.
func jobLimitReached(w http.ResponseWriter, limit int) {
	w.Header().Set("Retry-After", retryAfter)
	writeProblem(w, Problem{Type: probLimit, Title: "Limit reached", Status: http.StatusTooManyRequests,
		Detail: "the account already has " + strconv.Itoa(limit) + " jobs running or waiting, the most one account may have " +
			"(the server's --max-jobs-per-account); nothing was started: retry after Retry-After seconds, once one of them has ended (GET /v1/jobs/{id})"})
}

// getJob answers a job with its progress; another account's is not found.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.Store.GetJob(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "job")
		return
	}
	if ownedBy(w, r, j.AccountID, "job") {
		writeJSON(w, http.StatusOK, toJobJSON(j))
	}
}
