package eventtype

import (
	"errors"
	"fmt"
)

// Work is the schema work one publish request's checks may cost, all its
// events together, and what they have cost so far. Its unit, the schema
// test, is one value of an event's data checked against one subschema:
// each value of the data counts the most subschemas its type's schema
// applies to a value that deep (counted when the schema is compiled, at
// most MaxFanOut; at least 1), so an event's work is counted, in the walk
// the check makes anyway (badData), before the validator runs. The
// validator cannot be stopped once it runs, but what it does is linear in
// that count (the bounds of bounds.go). Decoding the data is not counted:
// it is bounded by the request's size, as parsing is for matching.
type Work struct {
	// Limit is the most schema tests (0: no limit).
	Limit int
	// Spent is what the checks charged so far.
	Spent int
}

// charge adds n schema tests to w (nil: charged nowhere); past w.Limit it
// returns a *WorkError.
func (w *Work) charge(n int) error {
	if w == nil {
		return nil
	}
	w.Spent += n
	if w.Limit > 0 && w.Spent > w.Limit {
		return &WorkError{Limit: w.Limit}
	}
	return nil
}

// ErrWork: checking a publish request's events against their schemas
// would cost more schema tests than its Work allows; nothing was checked
// past that point, and nothing of the request may be stored. A *WorkError
// says the limit.
var ErrWork = errors.New("checking the events against their schemas would cost too much")

// WorkError is the ErrWork a check returns, with the limit it applied.
type WorkError struct{ Limit int }

func (e *WorkError) Error() string {
	return fmt.Sprintf("%v: more than %d schema tests", ErrWork, e.Limit)
}

// Is makes errors.Is(err, ErrWork) true.
func (e *WorkError) Is(target error) bool { return target == ErrWork }
