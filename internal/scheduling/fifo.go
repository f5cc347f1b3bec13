package scheduling

import "time"

// fifo is a first-in, first-out queue.
type fifo[T any] struct {
	buf  []T
	head int
}

func (q *fifo[T]) len() int { return len(q.buf) - q.head }

func (q *fifo[T]) push(v T) { q.buf = append(q.buf, v) }

// pop removes the oldest element; the queue must not be empty. The backing
// array is compacted once half of it is spent, so memory follows the length.
func (q *fifo[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head++
	if q.head > 64 && q.head*2 >= len(q.buf) {
		q.buf = append(q.buf[:0], q.buf[q.head:]...)
		q.head = 0
	}
	return v
}

// take removes, in order, the elements for which keep reports true and
// leaves the others in their order. It reads the whole queue: O(len).
func (q *fifo[T]) take(keep func(T) bool) {
	rest := q.buf[q.head:q.head]
	for _, v := range q.buf[q.head:] {
		if !keep(v) {
			rest = append(rest, v)
		}
	}
	var zero T
	for i := q.head + len(rest); i < len(q.buf); i++ {
		q.buf[i] = zero
	}
	q.buf = q.buf[:q.head+len(rest)]
}

type (
	deque = fifo[*item]
	ring  = fifo[*lane]
)

// earlier returns the earlier of two times, where zero means "none".
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
