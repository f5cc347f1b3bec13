package sqlite

import "github.com/herald-events/herald/internal/store/sqlrow"

// The queue's reads and locks are the engine's (internal/store/engine,
// queue.go; queries/queue.sql). What stays here serves the writer's own
// requests.

// countQueuedRows are the queued deliveries' entries of deliveries_queued
// (CountBacklog).
const countQueuedRows = `SELECT 1 FROM deliveries AS d INDEXED BY deliveries_queued WHERE d.status = 'queued'`

// notifyQueued passes the subscriptions of set, whose deliveries a write
// made receivable, to Options.OnQueued, to wake the receivers waiting
// there. It runs after the commit, on the caller's goroutine.
func (s *backend) notifyQueued(set sqlrow.IDSet) {
	if s.onQueued != nil && len(set.IDs) > 0 {
		s.onQueued(set.IDs)
	}
}
