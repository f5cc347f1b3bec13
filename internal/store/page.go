package store

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
)

// ErrInvalidCursor is returned by a list method given a cursor it did not
// produce.
var ErrInvalidCursor = errors.New("invalid cursor")

// Page sizes every list method applies.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// MaxPageBytes bounds a page in bytes as Size bounds it in items: a page ends
// after the item that brings its items' bytes to MaxPageBytes or more (with a
// cursor to the rest), so an item larger than the bound still comes, alone
// on its page. An item's bytes are those of its variable-length fields as
// stored, the fields that can make an item large: each list method names
// them. A list method reads the sizes of the next items first and then only
// the items its page holds, so a page never takes more memory than the
// bound plus one item.
const MaxPageBytes = 4 << 20

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

// Len returns how many items the page holds, given the byte sizes of the
// items after its cursor in list order (up to Size()+1 of them; a list
// has more after the page when Len is less than len(sizes)): at most
// Size(), ending after the item that brings the total to MaxPageBytes or
// more.
func (p Page) Len(sizes []int64) int {
	n, total := 0, int64(0)
	for n < len(sizes) && n < p.Size() && total < MaxPageBytes {
		total += sizes[n]
		n++
	}
	return n
}

// IDCursor is the format of the cursors of lists in ID order: the ID of
// the last item of the page before, in the shape of its kind's ids
// (internal/ids).
type IDCursor struct{ ids.Shape }

// The cursors of the lists in ID order.
var (
	DeliveryCursor     = IDCursor{ids.Delivery}
	SubscriptionCursor = IDCursor{ids.Subscription}
	EndpointCursor     = IDCursor{ids.Endpoint}
	KeyCursor          = IDCursor{ids.Key}
)

// AccountCursorCheck checks the format of the account list's cursors: an account
// ID (account.DefaultID, or one of the shape ids.Account).
func AccountCursorCheck(cursor string) error {
	if cursor == account.DefaultID {
		return nil
	}
	return IDCursor{ids.Account}.Check(cursor)
}

// Check returns an ErrInvalidCursor error unless cursor is empty (the first
// page) or has the format.
func (f IDCursor) Check(cursor string) error {
	if cursor != "" && !f.Fits(cursor) {
		return fmt.Errorf("cursor %q is not an id %s…: %w", cursor, f.Prefix, ErrInvalidCursor)
	}
	return nil
}

// NumberCursor reads the cursor of a list in the order of a number (a
// delivery's attempts): the number of the last item of the page before, a
// whole number from 0 to 2^31−1; 0 for the first page ("").
func NumberCursor(cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(cursor, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != cursor {
		return 0, fmt.Errorf("cursor %q is not a whole number: %w", cursor, ErrInvalidCursor)
	}
	return int(n), nil
}
