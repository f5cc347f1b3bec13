package filter

import (
	"iter"
	"math/bits"
	"strings"
)

// Index narrows many matchers down to those an event may pass, so that an
// event costs one map lookup per indexed key rather than one check per
// subscription: a matcher with a StringIn filter (filters AND: an event
// that fails it fails the matcher) is filed under that filter's key and each
// of its values; a matcher without one is always a candidate. Candidates
// still have to be checked with Match: the index only leaves out matchers
// that cannot match. An Index is immutable and safe for concurrent use.
type Index[T any] struct {
	items []T
	plain []int32 // positions in items of those without a StringIn filter
	keys  []keyIndex
}

// keyIndex is the matchers filed under one key: by folded value, each
// value's list of item positions in ascending order (an item is filed once
// per value of its set, so a list holds no position twice).
type keyIndex struct {
	c      *cond // a StringIn filter on the key, to read the event's value
	values map[string]int32
	lists  [][]int32
}

// NewIndex files items by the matchers matcherOf gives them (nil: no
// filters, always a candidate).
func NewIndex[T any](items []T, matcherOf func(T) *Matcher) *Index[T] {
	ix := &Index[T]{items: items}
	byKey := map[string]int{}
	for pos, it := range items {
		c := matcherOf(it).stringIn()
		if c == nil {
			ix.plain = append(ix.plain, int32(pos))
			continue
		}
		name := c.attr
		if c.path != nil {
			name = "data." + strings.Join(c.path, ".")
		}
		i, ok := byKey[name]
		if !ok {
			i = len(ix.keys)
			byKey[name] = i
			ix.keys = append(ix.keys, keyIndex{c: c, values: map[string]int32{}})
		}
		k := &ix.keys[i]
		for v := range c.set {
			n, ok := k.values[v]
			if !ok {
				n = int32(len(k.lists))
				k.values[v] = n
				k.lists = append(k.lists, nil)
			}
			k.lists[n] = append(k.lists[n], int32(pos))
		}
	}
	return ix
}

// Indexed reports whether any item is filed by a key (else Candidates
// yields every item, in order).
func (ix *Index[T]) Indexed() bool { return len(ix.keys) > 0 }

// Candidates yields every item that may match ev, each once: the items
// without a StringIn filter, then, per key, those whose values hold the
// event's value for it (any string element of an array value). Its work is
// linear in the size of the event's values for the indexed keys (one map
// lookup per string element, however many of them hold the same value) plus
// the items it yields; an array whose elements hold several values of the
// key costs in addition one bit per item of the index. Each lookup spends
// its tests on ev as a StringIn filter's test does (an element not a
// string, one); when ev's pacer stops the matching, it yields no more (see
// Event.Err).
func (ix *Index[T]) Candidates(ev *Event) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, pos := range ix.plain {
			if !yield(ix.items[pos]) {
				return
			}
		}
		for i := range ix.keys {
			k := &ix.keys[i]
			v, ok := ev.lookup(k.c)
			if !ok {
				continue // a missing key fails StringIn
			}
			var list []int32
			switch v := v.(type) {
			case string:
				if !ev.spend(stringCost(v)) {
					return
				}
				if n, ok := k.values[string(ev.folded(v))]; ok {
					list = k.lists[n]
				}
			case []any:
				var more bool
				if list, more = k.hits(ev, v); more {
					list = ix.union(k, list)
				}
				if ev.Err() != nil {
					return
				}
			}
			for _, pos := range list {
				if !yield(ix.items[pos]) {
					return
				}
			}
		}
	}
}

// hits reads the string elements of arr, one lookup each. It returns the
// list of the first value of k that an element holds, and more when the
// elements hold other values of k too: then list holds, instead, the
// distinct value numbers (into k.lists) the elements hold, in the order
// first seen.
func (k *keyIndex) hits(ev *Event, arr []any) (list []int32, more bool) {
	first := int32(-1)
	var seen []uint64 // a bit per value of k, once a second value is hit
	var nums []int32
	for _, x := range arr {
		s, ok := x.(string)
		cost := 1
		if ok {
			cost = stringCost(s)
		}
		if !ev.spend(cost) {
			return nil, false
		}
		if !ok {
			continue
		}
		n, ok := k.values[string(ev.folded(s))]
		switch {
		case !ok, n == first:
			continue
		case first < 0:
			first = n
			continue
		case seen == nil:
			seen = make([]uint64, (len(k.lists)+63)/64)
			seen[first/64] |= 1 << (first % 64)
			nums = append(nums, first)
		case seen[n/64]&(1<<(n%64)) != 0:
			continue
		}
		seen[n/64] |= 1 << (n % 64)
		nums = append(nums, n)
	}
	if first < 0 {
		return nil, false
	}
	if nums == nil {
		return k.lists[first], false
	}
	return nums, true
}

// union returns the positions held by the lists of the value numbers nums
// of k, each once, in ascending order.
func (ix *Index[T]) union(k *keyIndex, nums []int32) []int32 {
	set := make([]uint64, (len(ix.items)+63)/64)
	n := 0
	for _, v := range nums {
		for _, pos := range k.lists[v] {
			if set[pos/64]&(1<<(pos%64)) == 0 {
				set[pos/64] |= 1 << (pos % 64)
				n++
			}
		}
	}
	out := make([]int32, 0, n)
	for w, word := range set {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, int32(w*64+b))
			word &= word - 1
		}
	}
	return out
}

// stringIn returns the matcher's first StringIn filter, nil when it has
// none (or m is nil).
func (m *Matcher) stringIn() *cond {
	if m == nil {
		return nil
	}
	for i := range m.conds {
		c := &m.conds[i]
		if c.op.test == testStringIn && !c.op.negative {
			return c
		}
	}
	return nil
}
