package sqlrow

import (
	"strings"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// JobColumns are the columns of a job that ScanJob reads, in its order.
const JobColumns = `id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at`

// ScanJob reads a job's JobColumns.
func ScanJob(sc RowScanner) (job.Job, error) {
	var j job.Job
	var since, until, created, finished int64
	var statuses string
	if err := sc.Scan(&j.ID, &j.Kind, &j.AccountID, &j.SubscriptionID, &j.State, &since, &until, &statuses,
		&j.Total, &j.Done, &j.Errors, &j.Error, &j.CursorStatus, &j.CursorID, &created, &finished); err != nil {
		return job.Job{}, err
	}
	j.Since, j.CreatedAt = FromUnixMS(since), FromUnixMS(created)
	if until != 0 {
		j.Until = FromUnixMS(until)
	}
	if finished != 0 {
		j.FinishedAt = FromUnixMS(finished)
	}
	for _, st := range strings.Split(statuses, ",") {
		j.Statuses = append(j.Statuses, delivery.Status(st))
	}
	return j, nil
}

// jobStatuses is the statuses column of j.
func jobStatuses(j job.Job) string {
	names := make([]string, len(j.Statuses))
	for i, st := range j.Statuses {
		names[i] = string(st)
	}
	return strings.Join(names, ",")
}

// untilMS is the until_ms column of j (0: no end).
func untilMS(j job.Job) int64 {
	if j.Until.IsZero() {
		return 0
	}
	return UnixMS(j.Until)
}

// RecoverWindow is the range of delivery ids a batch of j seeks in its
// status: at or after from, after the cursor (j.CursorID), before `before`.
// A delivery's id begins with the time it was made (its CreatedAt), so the
// range is store.DeliveryFilter's (IDRange): made at or after Since,
// before Until, to the millisecond; with no Until, before every id.
func RecoverWindow(j job.Job) (from, before string) {
	from, before = store.DeliveryFilter{Since: j.Since, Before: j.Until}.IDRange()
	if before == "" {
		before = ids.Delivery.Prefix + "~" // '~' sorts after every character of an id
	}
	return from, before
}

// RecoverStep is what a batch found and moved, and the job after it: the
// cursor advanced past the last id looked at (the next status when fewer
// than limit were found; done after the last), progress counted, Total at
// least Done.
func RecoverStep(j job.Job, looked []string, moved store.RedriveResult, limit int) job.Job {
	j.Done += moved.Count
	j.Errors += len(looked) - moved.Count
	j.Total = max(j.Total, j.Done)
	if len(looked) == limit {
		j.CursorID = looked[len(looked)-1]
		return j
	}
	j.CursorStatus++
	j.CursorID = ""
	if j.CursorStatus >= len(j.Statuses) {
		j.State = job.StateDone
	}
	return j
}

// JobValues are the values of a new job's row, in the order of the
// columns id, kind, account_id, subscription_id, state, since_ms,
// until_ms, statuses, total, created_at.
func JobValues(j job.Job) []any {
	return []any{j.ID, string(j.Kind), j.AccountID, j.SubscriptionID, string(j.State),
		UnixMS(j.Since), untilMS(j), jobStatuses(j), j.Total, UnixMS(j.CreatedAt)}
}

// JobProgress are the values that store j's progress after a batch and
// give the job back, in the order of the columns state, total, done,
// errors, error, cursor_status, cursor_id, finished_at, and then its id
// (the statement also clears the lease): an ended job's FinishedAt is set
// to now.
func JobProgress(j *job.Job, now time.Time) []any {
	var finished int64
	if j.Finished() {
		j.FinishedAt, finished = now, UnixMS(now)
	}
	return []any{string(j.State), j.Total, j.Done, j.Errors, j.Error, j.CursorStatus, j.CursorID, finished, j.ID}
}
