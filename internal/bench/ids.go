package bench

import (
	"encoding/hex"
	"hash/fnv"
	"strconv"
)

// Event ids. By default event n of a load whose ids start with prefix has
// id prefix+n, so ids sort (nearly) in publish order, as UUIDv7, ULIDs or
// a counter do. With Sizes.UUIDIDs they are random UUIDv4s instead, as the
// CloudEvents SDKs make them by default: their order is random, and so is
// where each one lands in the store's deduplication index (every event
// then writes a page of its own there; docs/benchmarks.md, "Stop 19").
//
// A UUID id still says which event it is, so that receivers count it:
//
//	xxxxxxxx-xxxx-4ttt-Tttt-nnnnnnnnnnnn
//
// x: 48 bits that look random (a hash of prefix and n, the same on every
// call, so that a retried request repeats its ids); t: 26 bits of a hash of
// prefix (the phase), so that a stale receipt from another phase is not
// counted; T: the RFC 9562 variant bits 10 and 2 tag bits; n: n in hex.

// appendEventID appends the id of event n of the load with prefix.
func appendEventID(b []byte, prefix string, n int, uuid bool) []byte {
	if !uuid {
		b = append(b, prefix...)
		return strconv.AppendInt(b, int64(n), 10)
	}
	tag := idTag(prefix)
	mix := splitmix64(uint64(tag)<<32 ^ uint64(n))
	var u [16]byte
	for i := range 6 {
		u[i] = byte(mix >> (56 - 8*i))
	}
	u[6] = 0x40 | byte(tag>>22)&0x0f
	u[7] = byte(tag >> 14)
	u[8] = 0x80 | byte(tag>>8)&0x3f
	u[9] = byte(tag)
	for i := range 6 {
		u[10+i] = byte(uint64(n) >> (40 - 8*i))
	}
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return append(b, s[:]...)
}

// eventNumber returns n for the id appendEventID made of event n with
// prefix and uuid; ok is false for any other id (another phase's, say).
func eventNumber[ID string | []byte](id ID, prefix string, uuid bool) (n int, ok bool) {
	if !uuid {
		if len(id) <= len(prefix) || string(id[:len(prefix)]) != prefix {
			return 0, false
		}
		n, err := strconv.Atoi(string(id[len(prefix):]))
		return n, err == nil && n >= 0
	}
	if len(id) != 36 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(id[24:]), 16, 48)
	if err != nil {
		return 0, false
	}
	var want [36]byte
	if string(appendEventID(want[:0], prefix, int(v), true)) != string(id) {
		return 0, false
	}
	return int(v), true
}

// idTag is a 26-bit hash of prefix.
func idTag(prefix string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return h.Sum32() & (1<<26 - 1)
}

// splitmix64 scrambles x (a bijection), so that consecutive events' ids
// lie far apart.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
