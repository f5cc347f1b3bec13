package engine

// lines holds items in one first-in first-out line per account, and the
// accounts that have items in the order they take turns: the writer's
// waiting requests and its staged publishes (writer.go).
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
