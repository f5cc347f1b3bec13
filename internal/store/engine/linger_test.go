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

// TestLingerEndsWhenTheQueueIsQuiet: with nothing arriving, the wait is one
// gap (Linger/lingerGaps), not the whole Linger.
func TestLingerEndsWhenTheQueueIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := lingerWriter(16)
		var lg lingering
		start := time.Now()
		w.linger(&lg, &w.reqs)
		if got := time.Since(start); got != 100*time.Microsecond {
			t.Errorf("waited %v with no request arriving, want one gap (100µs)", got)
		}
	})
}

// TestLingerEndsAtLingerBelow: requests arriving within a gap of each
// other keep it waiting until LingerBelow wait.
func TestLingerEndsAtLingerBelow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := lingerWriter(4)
		w.waiting.push("", &request{}) // the one that started the batch
		feed(w, 10, 50*time.Microsecond)
		var lg lingering
		start := time.Now()
		w.linger(&lg, &w.reqs)
		if got := time.Since(start); got != 150*time.Microsecond {
			t.Errorf("waited %v, want 150µs (three arrivals 50µs apart)", got)
		}
		if w.waiting.n != 4 {
			t.Errorf("%d requests waiting, want LingerBelow (4)", w.waiting.n)
		}
		for len(w.reqs) < 10-3 {
			time.Sleep(50 * time.Microsecond) // let the feeder finish
		}
	})
}

// TestLingerEndsAtMaxBatchRows: a wait ends once the requests waiting
// hold a full batch's rows, however few they are.
func TestLingerEndsAtMaxBatchRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := lingerWriter(16)
		w.waiting.push("", &request{rows: 97})
		feed(w, 10, 50*time.Microsecond)
		var lg lingering
		start := time.Now()
		w.linger(&lg, &w.reqs)
		if got := time.Since(start); got != 150*time.Microsecond {
			t.Errorf("waited %v, want 150µs (three rows to a full batch, 50µs apart)", got)
		}
		for len(w.reqs) < 10-3 {
			time.Sleep(50 * time.Microsecond) // let the feeder finish
		}
	})
}

// TestLingerEndsAtLinger: a stream that never reaches LingerBelow is
// waited for at most Linger.
func TestLingerEndsAtLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := lingerWriter(100)
		feed(w, 60, 60*time.Microsecond)
		var lg lingering
		start := time.Now()
		w.linger(&lg, &w.reqs)
		if got := time.Since(start); got != 800*time.Microsecond {
			t.Errorf("waited %v, want Linger (800µs)", got)
		}
		if w.waiting.n != 13 {
			t.Errorf("%d requests taken, want the 13 that arrived within Linger", w.waiting.n)
		}
		for len(w.reqs) < 60-13 {
			time.Sleep(60 * time.Microsecond) // let the feeder finish
		}
	})
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
