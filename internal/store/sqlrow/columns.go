// Package sqlrow is how both SQL stores (store/sqlite and store/postgres)
// keep values in columns and rows: times as Unix milliseconds, leases,
// pages, and the subscription and endpoint row codecs.
package sqlrow

import (
	"math"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// UnixMS stores t as Unix milliseconds; the zero time is 0. Precision below
// a millisecond is dropped, and the instant 1970-01-01T00:00:00Z itself
// reads back as the zero time.
func UnixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromUnixMS is the inverse of UnixMS; times come back in UTC.
func FromUnixMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// LeaseUntilMS is the lease_until column value for l. A lease must be
// non-zero to count as held, so a zero (or pre-1970) Until is stored as
// "held until released": such a lease never expires.
func LeaseUntilMS(l store.Lease) int64 {
	v := UnixMS(l.Until)
	if v <= 0 {
		return math.MaxInt64
	}
	return v
}

// TrimPage trims rows fetched with limit size+1 to size and returns the
// cursor of the next page: the key of the last row kept, or "" when there
// is no more.
func TrimPage[T any](rows []T, size int, key func(T) string) ([]T, string) {
	if len(rows) <= size {
		return rows, ""
	}
	rows = rows[:size]
	return rows, key(rows[size-1])
}
