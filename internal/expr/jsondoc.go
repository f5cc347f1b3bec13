package expr

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"unsafe"
)

// doc is an index of one JSON document: where each of its values lies in
// the document's bytes, and a container's members or elements, built in
// one pass without decoding anything (lazy.go decodes a value when an
// expression reads it). It is immutable once built, so evaluations may
// share it. It takes 28 bytes a value of the document, plus a map of the
// names of each object of more than smallObject members: about what the
// document's own bytes take for small values, well under what decoding it
// took.
type doc struct {
	raw []byte
	// nodes are the document's values in document order; nodes[0] is the
	// document itself.
	nodes []node
	// kids holds each container's children, contiguously: node.kids.
	kids []int32
	// names maps a member name to its child's index in kids, for each
	// object of more than smallObject members (by node index); small
	// objects are searched in order.
	names map[int32]map[string]int32
	// conts holds a container for each object and array of nodes, in node
	// order: their CEL values point at them (doc.container), so that
	// reading one allocates nothing.
	conts []container
}

// node is one value of a doc: raw[start:end]. In an object, raw[name:nameEnd]
// is its member name, quoted; a container's children are
// kids[kids:kids+n]; a string's n is 1 when it holds an escape.
type node struct {
	start, end    int32
	name, nameEnd int32
	kids, n       int32
}

// smallObject is the most members an object may have and still be
// searched in order rather than through a map.
const smallObject = 16

// indexJSON is the index of raw, or false when raw is not for the lazy
// path: not valid I-JSON (RFC 7493, as go-json-experiment/json checks it:
// bad syntax, invalid UTF-8 or escapes, a duplicate member name, nesting
// deeper than maxDepth), more than math.MaxInt32 bytes, or holding a
// member name with an escape. The caller then decodes raw eagerly
// (decodeTop), which refuses or accepts it as it always did.
// FuzzIndexJSON holds it to go-json-experiment/json's answer.
func indexJSON(raw []byte) (*doc, bool) {
	d := new(doc)
	return d, d.index(raw)
}

// index makes d, a zero doc, the index of raw, or reports false as
// indexJSON does.
func (d *doc) index(raw []byte) bool {
	if len(raw) > math.MaxInt32 {
		return false
	}
	d.raw = raw
	s := scanner{doc: d, raw: raw, nodes: make([]node, 0, len(raw)/24+4), kids: make([]int32, 0, len(raw)/24+4),
		open: make([]int32, 0, 32)}
	_, ok := s.value()
	if s.sync(); !ok || s.escapedName {
		return false
	}
	if s.space(); s.pos != len(raw) {
		return false
	}
	d.addContainers(s.containers)
	return true
}

// addContainers fills conts with the n containers of d's nodes, with room
// for one more (the event, input's addObject).
func (d *doc) addContainers(n int) {
	d.conts = make([]container, 0, n+1)
	for i := range d.nodes {
		if c := d.raw[d.nodes[i].start]; c == '{' || c == '[' {
			d.conts = append(d.conts, container{d: d, i: int32(i)})
		}
	}
}

// container is node i's container (i is an object or an array).
func (d *doc) container(i int32) *container {
	j, _ := slices.BinarySearchFunc(d.conts, i, func(c container, i int32) int { return cmp.Compare(c.i, i) })
	return &d.conts[j]
}

// indexNames maps object i's member names to its children (names), when
// it has more than smallObject members, and reports whether they differ.
func (d *doc) indexNames(i int32) bool {
	n := d.nodes[i]
	if n.n <= smallObject {
		return d.namesDiffer(n.kids, n.kids+n.n)
	}
	if d.names == nil {
		d.names = make(map[int32]map[string]int32)
	}
	m := make(map[string]int32, n.n)
	for k := n.kids; k < n.kids+n.n; k++ {
		name := view(d.nameOf(d.kids[k]))
		if _, dup := m[name]; dup {
			return false
		}
		m[name] = k
	}
	d.names[i] = m
	return true
}

// namesDiffer reports whether the members kids[from:to] have different
// names, comparing each pair.
func (d *doc) namesDiffer(from, to int32) bool {
	for k := from; k < to; k++ {
		a := &d.nodes[d.kids[k]]
		for j := from; j < k; j++ {
			b := &d.nodes[d.kids[j]]
			if a.nameEnd-a.name == b.nameEnd-b.name && bytes.Equal(d.raw[a.name:a.nameEnd], d.raw[b.name:b.nameEnd]) {
				return false
			}
		}
	}
	return true
}

// addObject adds to d an object of some of object o's members (members,
// node indexes) and returns its node's index. It is for building d: d is
// immutable once shared.
func (d *doc) addObject(o int32, members []int32) int32 {
	i := int32(len(d.nodes))
	n := d.nodes[o]
	n.kids, n.n = int32(len(d.kids)), int32(len(members))
	d.nodes = append(d.nodes, n)
	d.kids = append(d.kids, members...)
	if n.n > smallObject {
		d.indexNames(i)
	}
	d.conts = append(d.conts, container{d: d, i: i})
	return i
}

// nameOf is node i's member name, unquoted (the doc has no escaped names).
func (d *doc) nameOf(i int32) []byte {
	n := &d.nodes[i]
	return d.raw[n.name+1 : n.nameEnd-1]
}

// view is b, bytes of a doc's raw, as a string sharing them (no copy).
// That is safe because raw does not change while the doc is used (NewInput
// requires it of the payload), and because nothing an evaluation makes
// outlives that use but what its caller keeps: the JSON it wrote, a bool,
// an error's message (which may quote a member: keeping it keeps the
// payload's bytes alive, and they must not change then either).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// member is the index in kids of object o's member named name, or -1.
func (d *doc) member(o int32, name string) int32 {
	if m, ok := d.names[o]; ok {
		if k, ok := m[name]; ok {
			return k
		}
		return -1
	}
	n := &d.nodes[o]
	for k := n.kids; k < n.kids+n.n; k++ {
		if string(d.nameOf(d.kids[k])) == name {
			return k
		}
	}
	return -1
}
