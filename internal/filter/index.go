package filter

import "strings"

// Index narrows many matchers down to those an event may pass, so that an
// event costs one map lookup per indexed key rather than one check per
// subscription: a matcher with a StringIn filter (filters AND: an event
// that fails it fails the matcher) is filed under that filter's key and each
// of its values; a matcher without one is always a candidate. Candidates
// still have to be checked with Match: the index only leaves out matchers
// that cannot match. An Index is immutable and safe for concurrent use.
type Index[T any] struct {
	plain []T
	keys  []keyIndex[T]
}

// keyIndex is the matchers filed under one key: by folded value.
type keyIndex[T any] struct {
	c      *cond // a StringIn filter on the key, to read the event's value
	values map[string][]T
}

// NewIndex files items by the matchers matcherOf gives them (nil: no
// filters, always a candidate). Items keep their order within each list.
func NewIndex[T any](items []T, matcherOf func(T) *Matcher) *Index[T] {
	ix := &Index[T]{}
	byKey := map[string]int{}
	for _, it := range items {
		c := matcherOf(it).stringIn()
		if c == nil {
			ix.plain = append(ix.plain, it)
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
			ix.keys = append(ix.keys, keyIndex[T]{c: c, values: map[string][]T{}})
		}
		for v := range c.set {
			ix.keys[i].values[v] = append(ix.keys[i].values[v], it)
		}
	}
	return ix
}

// Indexed reports whether any item is filed by a key (else Candidates
// yields every item, in order).
func (ix *Index[T]) Indexed() bool { return len(ix.keys) > 0 }

// Candidates calls yield with every item that may match ev: the items
// without a StringIn filter, then, per key, those whose values hold the
// event's value for it (any string element of an array value). An item may
// be yielded more than once when several array elements hold its values.
func (ix *Index[T]) Candidates(ev *Event, yield func(T)) {
	for _, it := range ix.plain {
		yield(it)
	}
	for i := range ix.keys {
		k := &ix.keys[i]
		v, ok := ev.lookup(k.c)
		if !ok {
			continue // a missing key fails StringIn
		}
		switch v := v.(type) {
		case string:
			for _, it := range k.values[string(ev.folded(v))] {
				yield(it)
			}
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					for _, it := range k.values[string(ev.folded(s))] {
						yield(it)
					}
				}
			}
		}
	}
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
