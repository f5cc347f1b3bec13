// Package ids makes Herald's resource identifiers: a type prefix ("sub_",
// "dlv_") and 26 characters of a ULID (48 bits of milliseconds, 80 random
// bits, Crockford base32). IDs made later sort after earlier ones (within a
// millisecond the order is random), so lists can page by ID.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// New returns prefix followed by a new ULID for time t.
func New(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24+)
	var out [26]byte
	// 128 bits into 26 base32 characters: the first character carries 3 bits.
	var hi, lo = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return prefix + string(out[:])
}
