package expr

import (
	"bytes"
	"math"

	"github.com/go-json-experiment/json/jsontext"
)

// doc is an index of one JSON document: where each of its values lies in
// the document's bytes, and a container's members or elements, built in
// one pass without decoding anything (lazy.go decodes a value when an
// expression reads it). It is immutable once built, so evaluations may
// share it.
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
}

// node is one value of a doc: raw[start:end]. In an object, raw[name:nameEnd]
// is its member name, quoted; a container's children are
// kids[kids:kids+n].
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
// bad syntax, invalid UTF-8 or a duplicate member name), more than
// math.MaxInt32 bytes, or holding a member name with an escape. The
// caller then decodes raw eagerly (decodeTop), which refuses or accepts
// it as it always did.
func indexJSON(raw []byte) (*doc, bool) {
	if len(raw) > math.MaxInt32 || !jsontext.Value(raw).IsValid() {
		return nil, false
	}
	s := scanner{doc: &doc{raw: raw, nodes: make([]node, 0, len(raw)/24+4), kids: make([]int32, 0, len(raw)/24+4)},
		open: make([]int32, 0, 32)}
	s.value()
	if s.escapedName {
		return nil, false
	}
	return s.doc, true
}

// scanner builds a doc from JSON already known to be valid, so it checks
// nothing. Its recursion is as deep as the document (at most
// go-json-experiment/json's depth limit, 10,000).
type scanner struct {
	*doc
	pos int
	// open holds the children of the containers being scanned.
	open        []int32
	escapedName bool
}

// value scans the value at pos and returns its node's index.
func (s *scanner) value() int32 {
	s.space()
	i := int32(len(s.nodes))
	s.nodes = append(s.nodes, node{start: int32(s.pos)})
	switch s.raw[s.pos] {
	case '{':
		s.object(i)
	case '[':
		s.array(i)
	case '"':
		s.pos, _ = stringEnd(s.raw, s.pos)
	default:
		s.pos = literalEnd(s.raw, s.pos)
	}
	s.nodes[i].end = int32(s.pos)
	return i
}

// object scans the object at pos, node i.
func (s *scanner) object(i int32) {
	mark := len(s.open)
	s.pos++
	for {
		s.space()
		switch s.raw[s.pos] {
		case '}':
			s.pos++
			s.close(i, mark)
			return
		case ',':
			s.pos++
			s.space()
		}
		name := s.pos
		end, escaped := stringEnd(s.raw, s.pos)
		s.escapedName = s.escapedName || escaped
		s.pos = end
		s.space()
		s.pos++ // the colon
		k := s.value()
		s.nodes[k].name, s.nodes[k].nameEnd = int32(name), int32(end)
		s.open = append(s.open, k)
	}
}

// array scans the array at pos, node i.
func (s *scanner) array(i int32) {
	mark := len(s.open)
	s.pos++
	for {
		s.space()
		switch s.raw[s.pos] {
		case ']':
			s.pos++
			s.close(i, mark)
			return
		case ',':
			s.pos++
		}
		s.open = append(s.open, s.value())
	}
}

// close ends container i, whose children are open[mark:]: they move to
// kids.
func (s *scanner) close(i int32, mark int) {
	n := &s.nodes[i]
	n.kids, n.n = int32(len(s.kids)), int32(len(s.open)-mark)
	s.kids = append(s.kids, s.open[mark:]...)
	s.open = s.open[:mark]
	if s.raw[n.start] == '{' {
		s.indexNames(i)
	}
}

// indexNames maps object i's member names to its children (names), when
// it has more than smallObject members.
func (d *doc) indexNames(i int32) {
	n := d.nodes[i]
	if n.n <= smallObject {
		return
	}
	if d.names == nil {
		d.names = make(map[int32]map[string]int32)
	}
	m := make(map[string]int32, n.n)
	for k := n.kids; k < n.kids+n.n; k++ {
		m[string(d.nameOf(d.kids[k]))] = k
	}
	d.names[i] = m
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
	d.indexNames(i)
	return i
}

// space skips whitespace.
func (s *scanner) space() {
	for s.pos < len(s.raw) {
		switch s.raw[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// stringEnd is the end of the valid JSON string that starts at i, and
// whether it holds an escape.
func stringEnd(raw []byte, i int) (end int, escaped bool) {
	for i++; ; {
		q := bytes.IndexByte(raw[i:], '"')
		body := raw[i : i+q]
		if bytes.IndexByte(body, '\\') < 0 {
			return i + q + 1, escaped
		}
		escaped = true
		// The quote may be escaped: count the backslashes before it.
		n := 0
		for n < len(body) && body[len(body)-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + q + 1, true
		}
		i += q + 1
	}
}

// literalEnd is the end of the valid number, true, false or null that
// starts at i.
func literalEnd(raw []byte, i int) int {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// nameOf is node i's member name, unquoted (the doc has no escaped names).
func (d *doc) nameOf(i int32) []byte {
	n := &d.nodes[i]
	return d.raw[n.name+1 : n.nameEnd-1]
}

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
