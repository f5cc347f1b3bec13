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

// Alphabet is the alphabet of an ID after its prefix: Crockford's base32
// in lower case.
const Alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// New returns prefix followed by a new ULID for time t.
func New(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24+)
	return encode(prefix, binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]))
}

// encode returns prefix and the 128 bits hi, lo in Crockford base32.
func encode(prefix string, hi, lo uint64) string {
	var out [26]byte
	// 128 bits into 26 base32 characters: the first character carries 3 bits.
	for i := 25; i >= 0; i-- {
		out[i] = Alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return prefix + string(out[:])
}

// Sequence returns a function that makes IDs for time t, prefix followed
// by a ULID, that sort in the order they are made: the first has random
// bits as New's, each next one the previous one's plus one. A publish's
// deliveries get theirs from one sequence, so the order they are made in
// (by event, then by subscription) is their ID order too, and the store
// writes a large publish's rows into neighbouring pages of every index
// keyed by ID (see store/sqlite's staged publishes).
func Sequence(prefix string, t time.Time) func() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	return func() string {
		s := encode(prefix, hi, lo)
		lo++
		if lo == 0 { // carry into the random bits of hi, never into the time
			hi = hi&^0xffff | (hi+1)&0xffff
		}
		return s
	}
}

// Floor returns the smallest ID of prefix for time t's millisecond: every
// ID New or Sequence makes for t's millisecond or later sorts at or after
// it, every one made for an earlier millisecond before it. A list of IDs
// in order is bounded in time by Floor of its bounds.
func Floor(prefix string, t time.Time) string {
	return encode(prefix, uint64(t.UnixMilli())<<16, 0)
}
