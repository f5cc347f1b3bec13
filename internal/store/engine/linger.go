package engine

import (
	"time"

	"github.com/herald-events/herald/internal/store/driver"
)

// The writer's linger (GroupCommit.Linger): under a stream of small
// writes (single-event publishes, an endpoint's outcomes one at a time)
// the writer commits as soon as it is free, so a busy writer commits
// batches of a few requests, each paying a commit (on SQLite, a WAL
// write of its pages). Lingering, a writer that has been busy waits
// briefly for more requests before it forms a batch, so that more share
// one commit.
//
// It lingers only when
//   - it has been continuously busy: its last lingerAfterBusy batches
//     each found requests waiting without the writer having waited for
//     one (a writer that waited is reset), so a light load never lingers
//     and pays no latency;
//   - fewer than GroupCommit.LingerBelow requests wait, holding fewer than
//     MaxBatchRows rows (a batch that is full already waits for nothing);
//
// and it waits only while requests keep arriving: it stops when none has
// come for a gap (Linger / lingerGaps), when LingerBelow requests or
// MaxBatchRows rows wait, or at Linger. Callers that each wait for their answer (a few publishers in
// turn) so cost a batch at most one gap, not the whole Linger.

// lingerAfterBusy is how many batches in a row a writer must have formed
// from requests already waiting before it lingers.
const lingerAfterBusy = 4

// lingerGaps divides Linger into the gap after which a quiet queue ends
// the wait.
const lingerGaps = 8

// lingering is one writer goroutine's linger state.
type lingering struct {
	busy  int         // batches formed in a row without waiting for a request
	timer *time.Timer // reused across lingers
}

// due reports whether the writer lingers before its next batch, with
// that many requests waiting, holding rows(), and counts the batch towards
// busy. rows is called only when the rest allows a linger.
func (lg *lingering) due(gc driver.GroupCommit, waiting int, rows func() int) bool {
	lg.busy++
	return gc.Linger > 0 && lg.busy > lingerAfterBusy && waiting < gc.LingerBelow && rows() < gc.MaxBatchRows
}

// waitingRows is the rows of the requests waiting. The caller holds mu.
func (w *writer) waitingRows() int {
	n := 0
	for _, line := range w.waiting.by {
		for _, r := range line {
			n += r.rows
		}
	}
	return n
}

// stop releases the timer.
func (lg *lingering) stop() {
	if lg.timer != nil {
		lg.timer.Stop()
	}
}

// wait is w's linger: it waits for more requests on reqs (adding them to
// the waiting lines) as described above. A queue found closed becomes nil and ends
// the wait.
func (lg *lingering) wait(w *writer, reqs *chan *request) {
	w.mu.Lock()
	rows := w.waitingRows()
	w.mu.Unlock()
	gap := max(w.gc.Linger/lingerGaps, time.Microsecond)
	deadline := time.Now().Add(w.gc.Linger)
	if lg.timer == nil {
		lg.timer = time.NewTimer(gap)
	} else {
		lg.timer.Reset(gap)
	}
	defer lg.timer.Stop()
	for {
		select {
		case r, ok := <-*reqs:
			if !ok {
				*reqs = nil
				return
			}
			n := w.addWaiting(r)
			rows += r.rows
			left := time.Until(deadline)
			if n >= w.gc.LingerBelow || rows >= w.gc.MaxBatchRows || left <= 0 {
				return
			}
			lg.timer.Reset(min(gap, left))
		case <-lg.timer.C:
			return
		}
	}
}
