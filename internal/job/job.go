// Package job is the operator's long-running work that outlives a request:
// a recover (every failed delivery of a subscription in a time range made
// due again). A job is stored (the store's jobs table), worked in batches
// of at most BatchSize deliveries by the job runner (internal/recovery) of
// whichever node holds its lease, and read back with its progress. This
// file holds the type and its states; recover.go the rules of a recover
// request.
package job

import (
	"time"

	"github.com/herald-events/herald/internal/delivery"
)

// Kind is what a job does.
type Kind string

// KindRecover makes a subscription's failed deliveries of a time range due
// again (POST /v1/subscriptions/{id}/recover).
const KindRecover Kind = "recover"

// State is where a job is.
type State string

const (
	// StateRunning: batches remain (the job may be between two, on any node).
	StateRunning State = "running"
	// StateDone: every delivery in the range was looked at.
	StateDone State = "done"
	// StateFailed: the job stopped before the end (its subscription was
	// deleted); Error says why.
	StateFailed State = "failed"
)

// BatchSize is the most deliveries one batch of a recover moves: one store
// transaction, which also stores the job's progress, so a batch is done
// whole or not at all.
const BatchSize = 500

// CountLimit bounds the count of a recover's deliveries when it starts
// (Total): counting stops there, and Total then grows with Done.
const CountLimit = 100_000

// Job is one job and its progress.
type Job struct {
	ID             string
	Kind           Kind
	AccountID      string
	SubscriptionID string
	State          State
	// Since and Until bound the deliveries' creation times: Since <= t,
	// and t < Until unless Until is zero.
	Since, Until time.Time
	// Statuses are the statuses of the deliveries recovered, in the order
	// the job works them.
	Statuses []delivery.Status
	// Total is the count of the deliveries to recover when the job
	// started (at most CountLimit), or Done when that is more.
	Total int
	// Done counts the deliveries made due again; Errors those in the range
	// that could not be (a dead letter's delivery whose subscription names
	// no dead-letter URL any more).
	Done, Errors int
	// Error says why a failed job stopped.
	Error string
	// Cursor is how far the job got: the index in Statuses of the status
	// being worked and the last delivery id looked at in it.
	CursorStatus int
	CursorID     string
	CreatedAt    time.Time
	FinishedAt   time.Time
}

// Finished reports whether the job has ended.
func (j Job) Finished() bool { return j.State != StateRunning }
