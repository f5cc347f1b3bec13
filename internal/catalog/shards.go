package catalog

import (
	"hash/maphash"
	"iter"
	"maps"
)

// nShards is how many shards a shardMap splits its entries into.
const nShards = 256

// shardSeed hashes every shardMap's keys.
var shardSeed = maphash.MakeSeed()

// shardMap is a map split into nShards shards by the hash of the key, so
// that a snapshot made from another's (derive) shares every shard it does
// not change: a change copies the one shard it writes (about 1/256 of the
// entries) and the first one copies the array of shard pointers, so a sync
// that changes a few subscriptions costs a few shards, not every entry. A
// shardMap is written only while its snapshot is built; once published it
// never changes.
type shardMap[K comparable, V any] struct {
	shards [nShards]map[K]V
	// owned marks the shards this map copied (or made) and so may write;
	// the others may be shared with the map it was derived from.
	owned [nShards / 64]uint64
	n     int
}

func shardOf[K comparable](k K) int { return int(maphash.Comparable(shardSeed, k) % nShards) }

// derive returns a map with m's entries that shares m's shards until it
// writes them.
func (m *shardMap[K, V]) derive() *shardMap[K, V] {
	return &shardMap[K, V]{shards: m.shards, n: m.n}
}

// get returns k's value (the zero value when absent).
func (m *shardMap[K, V]) get(k K) V { return m.shards[shardOf(k)][k] }

// writable returns shard i, copied first if m does not own it yet.
func (m *shardMap[K, V]) writable(i int) map[K]V {
	if m.owned[i/64]&(1<<(i%64)) == 0 {
		sh := maps.Clone(m.shards[i])
		if sh == nil {
			sh = map[K]V{}
		}
		m.shards[i] = sh
		m.owned[i/64] |= 1 << (i % 64)
	}
	return m.shards[i]
}

func (m *shardMap[K, V]) set(k K, v V) {
	sh := m.writable(shardOf(k))
	if _, ok := sh[k]; !ok {
		m.n++
	}
	sh[k] = v
}

func (m *shardMap[K, V]) delete(k K) {
	i := shardOf(k)
	if _, ok := m.shards[i][k]; !ok {
		return
	}
	delete(m.writable(i), k)
	m.n--
}

// all yields every entry, in no particular order.
func (m *shardMap[K, V]) all() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, sh := range m.shards {
			for k, v := range sh {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}
