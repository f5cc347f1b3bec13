package store

import "errors"

// ErrInvalidCursor is returned by a list method given a cursor it did not
// produce.
var ErrInvalidCursor = errors.New("invalid cursor")

// Page sizes every list method applies.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Size returns the number of items a list returns for p: DefaultLimit when
// p.Limit is zero or negative, at most MaxLimit.
func (p Page) Size() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}
