package sqlite

import "slices"

// lines holds items in one first-in first-out line per account, and the
// accounts that have items in the order they take turns: the writer's
// waiting requests and its staged publishes (see writer.run).
type lines[T any] struct {
	by   map[string][]T
	turn []string // accounts with items; the first one's turn is now
	n    int      // items in all
}

func (l *lines[T]) push(account string, v T) {
	if l.by == nil {
		l.by = map[string][]T{}
	}
	if len(l.by[account]) == 0 {
		l.turn = append(l.turn, account)
	}
	l.by[account] = append(l.by[account], v)
	l.n++
}

// head returns the first item of the account whose turn it is; l must not
// be empty.
func (l *lines[T]) head() T { return l.by[l.turn[0]][0] }

// pop removes the head item, and the turn passes to the next account.
func (l *lines[T]) pop() {
	acc := l.turn[0]
	line := l.by[acc]
	var zero T
	line[0] = zero // let it be collected
	l.n--
	l.turn = l.turn[1:]
	if len(line) == 1 {
		delete(l.by, acc)
		return
	}
	l.by[acc] = line[1:]
	l.turn = append(l.turn, acc)
}

// pass keeps the head item where it is and passes the turn to the next
// account.
func (l *lines[T]) pass() {
	acc := l.turn[0]
	l.turn = append(l.turn[1:], acc)
}

// add puts r in its line: a staged publish's, or a waiting request's.
func (w *writer) add(r *request) {
	if r.staged {
		w.staged.push(r.account, &stagedPublish{r: r, p: r.pub})
		return
	}
	w.waiting.push(r.account, r)
}

// take adds every request queued on reqs while fewer than its capacity
// wait (so what the writer holds stays bounded), without waiting for
// more, and reports whether reqs is still open.
func (w *writer) take(open bool) bool {
	for open && w.waiting.n < cap(w.reqs) {
		select {
		case r, ok := <-w.reqs:
			if !ok {
				return false
			}
			w.add(r)
		default:
			return open
		}
	}
	return open
}

// nextBatch takes the waiting requests of the next transaction into dst:
// one from each account's line in turn, round after round, while the batch
// holds fewer than maxBatch requests and its next one keeps it within
// maxTxRows rows (the first is taken whatever its size). The Publish
// requests come first, in the order taken, so that they are written
// together (see commit); the batch's requests come from different callers,
// so any order is one they could have come in.
func (w *writer) nextBatch(dst []*request) []*request {
	rows := 0
	for w.waiting.n > 0 && len(dst) < w.maxBatch {
		r := w.waiting.head()
		if len(dst) > 0 && rows+r.rows > w.maxTxRows {
			break
		}
		w.waiting.pop()
		dst = append(dst, r)
		rows += r.rows
	}
	slices.SortStableFunc(dst, func(a, b *request) int {
		switch {
		case a.pub != nil && b.pub == nil:
			return -1
		case a.pub == nil && b.pub != nil:
			return 1
		}
		return 0
	})
	return dst
}

// step runs one step of the staged publish whose turn it is, answers it
// when it is done, and passes the turn on. After a committed step it
// emits StagedStep and, in a test that set holdAfterStep to that step,
// waits for the next request: the next round writes it before any other
// step.
func (w *writer) step() {
	j := w.staged.head()
	steps := j.steps
	done := j.step(w)
	if j.steps > steps {
		w.signals.StagedStep.Signal(j.steps)
		if j.steps == w.holdAfterStep {
			if r, ok := <-w.reqs; ok {
				w.add(r)
			}
		}
	}
	if !done {
		w.staged.pass()
		return
	}
	w.staged.pop()
	w.answer(j.r)
}
