package expr

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// maxDepth is the deepest nesting of objects and arrays indexJSON takes:
// go-json-experiment/json's limit (and encoding/json's).
const maxDepth = 10000

// scanner builds a doc in one pass over its bytes, checking them as
// go-json-experiment/json does (indexJSON). Its recursion is at most
// maxDepth deep.
type scanner struct {
	*doc
	// raw, nodes and kids are the doc's, held here while the scan grows
	// them (the scanner is on the stack: appending to a field of the doc,
	// on the heap, costs a write barrier a value) and stored into the doc
	// before a method of the doc reads them (sync).
	raw   []byte
	nodes []node
	kids  []int32
	pos   int
	depth int
	// open holds the children of the containers being scanned.
	open []int32
	// scratch is where escaped strings are checked.
	scratch     []byte
	escapedName bool
	// containers counts the objects and arrays scanned.
	containers int
}

// value scans the value at pos: its node's index, or false when it is not
// valid.
func (s *scanner) value() (int32, bool) {
	s.space()
	i := int32(len(s.nodes))
	s.nodes = append(s.nodes, node{start: int32(s.pos)})
	var ok bool
	switch s.peek() {
	case '{':
		ok = s.object(i)
	case '[':
		ok = s.array(i)
	case '"':
		var escaped bool
		if escaped, ok = s.str(); escaped {
			s.nodes[i].n = 1 // doc.str
		}
	case 't':
		ok = s.literal("true")
	case 'f':
		ok = s.literal("false")
	case 'n':
		ok = s.literal("null")
	default:
		ok = s.number()
	}
	s.nodes[i].end = int32(s.pos)
	return i, ok
}

// object scans the object at pos, node i.
func (s *scanner) object(i int32) bool {
	mark, done, ok := s.enter('}')
	if done || !ok {
		return ok && s.close(i, mark)
	}
	for {
		if s.space(); s.peek() != '"' {
			return false
		}
		name := s.pos
		escaped, ok := s.str()
		end := s.pos
		if s.space(); !ok || s.peek() != ':' {
			return false
		}
		s.pos++
		k, ok := s.value()
		if !ok {
			return false
		}
		s.escapedName = s.escapedName || escaped
		s.nodes[k].name, s.nodes[k].nameEnd = int32(name), int32(end)
		s.open = append(s.open, k)
		if done, ok := s.next('}'); done || !ok {
			return ok && s.close(i, mark)
		}
	}
}

// array scans the array at pos, node i.
func (s *scanner) array(i int32) bool {
	mark, done, ok := s.enter(']')
	if done || !ok {
		return ok && s.close(i, mark)
	}
	for {
		k, ok := s.value()
		if !ok {
			return false
		}
		s.open = append(s.open, k)
		if done, ok := s.next(']'); done || !ok {
			return ok && s.close(i, mark)
		}
	}
}

// enter begins the container at pos: the mark of its children in open,
// and whether it is empty (done, closing read) or nested too deep (not
// ok).
func (s *scanner) enter(closing byte) (mark int, done, ok bool) {
	mark = len(s.open)
	s.containers++
	if s.depth++; s.depth > maxDepth {
		return mark, false, false
	}
	s.pos++
	if s.space(); s.peek() == closing {
		s.pos++
		return mark, true, true
	}
	return mark, false, true
}

// next reads what follows a member or an element: a comma (not done), the
// container's closing byte (done), or anything else (not ok).
func (s *scanner) next(closing byte) (done, ok bool) {
	s.space()
	switch s.peek() {
	case ',':
		s.pos++
		return false, true
	case closing:
		s.pos++
		return true, true
	}
	return false, false
}

// close ends container i, whose children are open[mark:]: they move to
// kids. It reports false for an object with a duplicate member name.
func (s *scanner) close(i int32, mark int) bool {
	s.depth--
	n := &s.nodes[i]
	n.kids, n.n = int32(len(s.kids)), int32(len(s.open)-mark)
	s.kids = append(s.kids, s.open[mark:]...)
	s.open = s.open[:mark]
	return s.raw[n.start] != '{' || s.sync().indexNames(i)
}

// sync stores the scan's nodes and kids into its doc, and returns it.
func (s *scanner) sync() *doc {
	s.doc.nodes, s.doc.kids = s.nodes, s.kids
	return s.doc
}

// peek is the byte at pos, 0 at the end.
func (s *scanner) peek() byte {
	if s.pos < len(s.raw) {
		return s.raw[s.pos]
	}
	return 0
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

// str scans the string at pos: whether it holds an escape, and false
// when it is not valid (a control character, invalid UTF-8, a bad
// escape, no end).
func (s *scanner) str() (escaped, ok bool) {
	start, ascii := s.pos, true
	for j := start + 1; j < len(s.raw); j++ {
		j = plainRun(s.raw, j)
		if j == len(s.raw) {
			break
		}
		switch c := s.raw[j]; {
		case c == '"':
			s.pos = j + 1
			return escaped, s.validString(start, escaped, ascii)
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return false, false
		default:
			ascii = false
		}
	}
	return false, false
}

// plainRun is the index of the first byte from j on that is not printable
// ASCII other than '"' and '\\' (len(raw) when there is none): the bytes
// of a string that need no check, eight at a time.
func plainRun(raw []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(raw); j += 8 {
		v := binary.LittleEndian.Uint64(raw[j:])
		quote, backslash := v^(ones*'"'), v^(ones*'\\')
		special := (v - ones*0x20) | (quote-ones)&^quote | (backslash-ones)&^backslash | v
		if special&highs != 0 {
			break
		}
	}
	for ; j < len(raw); j++ {
		if c := raw[j]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return j
		}
	}
	return j
}

// validString reports whether the string raw[start:pos] is valid:
// go-json-experiment/json decides when it holds an escape, and
// utf8.Valid when it holds non-ASCII bytes.
func (s *scanner) validString(start int, escaped, ascii bool) bool {
	raw := s.raw[start:s.pos]
	if escaped {
		var err error
		s.scratch, err = jsontext.AppendUnquote(s.scratch[:0], raw)
		return err == nil
	}
	return ascii || utf8.Valid(raw)
}

// literal scans true, false or null (lit) at pos.
func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.raw[s.pos:], []byte(lit)) {
		return false
	}
	s.pos += len(lit)
	return true
}

// number scans the number at pos: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.pos++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		return s.digits()
	}
	return true
}

// digits skips digits, and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.pos
	for c := s.peek(); c >= '0' && c <= '9'; c = s.peek() {
		s.pos++
	}
	return s.pos > start
}
