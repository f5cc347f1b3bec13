package engine

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/herald-events/herald/internal/store/driver"
)

// lingerWriter is a writer with only what linger uses: its queue and
// waiting lines, Linger 800µs (a gap of 100µs), LingerBelow below and
// MaxBatchRows 100.
func lingerWriter(below int) *writer {
	return &writer{gc: driver.GroupCommit{Linger: 800 * time.Microsecond, LingerBelow: below, MaxBatchRows: 100},
		reqs: make(chan *request, 64)}
}

// feed queues n requests of one row on w, one every `every`, from another
// goroutine.
func feed(w *writer, n int, every time.Duration) {
	go func() {
		for range n {
			time.Sleep(every)
			w.reqs <- &request{rows: 1}
		}
	}()
}

// TestLinger runs one linger of a writer (Linger 800µs, a gap of 100µs)
// while a feeder queues requests of one row at a steady pace, and checks
// how long it waited and how many requests wait after it:
//   - quiet: with nothing arriving, one gap, not the whole Linger;
//   - below: arrivals within a gap of each other keep it waiting until
//     LingerBelow wait;
//   - rows: it ends once the requests waiting hold a full batch's rows,
//     however few they are;
//   - linger: a stream that never reaches either is waited for Linger.
func TestLinger(t *testing.T) {
	for _, c := range []struct {
		name        string
		below       int
		firstRows   int // a request waiting before the linger (0: none)
		feed        int
		every       time.Duration
		wait        time.Duration
		waitingThen int
	}{
		{"quiet", 16, 0, 0, 0, 100 * time.Microsecond, 0},
		{"below", 4, 1, 10, 50 * time.Microsecond, 150 * time.Microsecond, 4},
		{"rows", 16, 97, 10, 50 * time.Microsecond, 150 * time.Microsecond, 4},
		{"linger", 100, 0, 60, 60 * time.Microsecond, 800 * time.Microsecond, 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := lingerWriter(c.below)
				if c.firstRows > 0 {
					w.waiting.push("", &request{rows: c.firstRows})
				}
				feed(w, c.feed, c.every)
				var lg lingering
				start := time.Now()
				lg.wait(w, &w.reqs)
				if got := time.Since(start); got != c.wait {
					t.Errorf("waited %v, want %v", got, c.wait)
				}
				if w.waiting.n != c.waitingThen {
					t.Errorf("%d requests waiting after it, want %d", w.waiting.n, c.waitingThen)
				}
				taken := w.waiting.n - min(c.firstRows, 1)
				for len(w.reqs) < c.feed-taken {
					time.Sleep(c.every) // let the feeder finish
				}
			})
		})
	}
}

// TestLingerOnlyWhenBusy: a writer lingers from its fifth batch in a row
// formed without waiting, only with fewer than LingerBelow requests and
// MaxBatchRows rows waiting, never without a Linger; waiting for a request
// (busy reset by run) starts the count again.
func TestLingerOnlyWhenBusy(t *testing.T) {
	gc := driver.GroupCommit{Linger: time.Millisecond, LingerBelow: 16, MaxBatchRows: 500}
	rows := func(n int) func() int { return func() int { return n } }
	var lg lingering
	for i := 1; i <= lingerAfterBusy; i++ {
		if lg.due(gc, 1, rows(1)) {
			t.Fatalf("lingers at batch %d in a row, want from %d", i, lingerAfterBusy+1)
		}
	}
	if !lg.due(gc, 15, rows(499)) {
		t.Errorf("does not linger at batch %d in a row with 15 requests of 499 rows waiting", lingerAfterBusy+1)
	}
	if lg.due(gc, 16, rows(16)) {
		t.Error("lingers with LingerBelow (16) requests waiting")
	}
	if lg.due(gc, 5, rows(500)) {
		t.Error("lingers with MaxBatchRows (500) rows waiting")
	}
	if lg.due(driver.GroupCommit{LingerBelow: 16, MaxBatchRows: 500}, 1, rows(1)) {
		t.Error("lingers without a Linger")
	}
	lg.busy = 0 // what run does before it waits for a request
	if lg.due(gc, 1, rows(1)) {
		t.Error("lingers at the first batch after waiting for a request")
	}
}
