package expr

import (
	"bytes"
	"slices"
)

// appendNode appends node i of d as appendJSON appends d.val(i) (and stops
// as it does past limit), copying
// what the document holds as encoding/json would write it (strings
// without escapes, small integers, true, false, null) and decoding the
// rest.
func (d *doc) appendNode(b []byte, i int32, limit int) ([]byte, error) {
	n := &d.nodes[i]
	raw := d.raw[n.start:n.end]
	switch raw[0] {
	case '{':
		return d.appendObject(b, i, limit)
	case '[':
		return d.appendArray(b, i, limit)
	case '"':
		if jsonSafe(raw[1 : len(raw)-1]) {
			return append(b, raw...), nil
		}
		return appendString(b, d.str(i)), nil
	case 't', 'f', 'n':
		return append(b, raw...), nil
	}
	if plainInt(raw) {
		return append(b, raw...), nil
	}
	return appendFloat(b, parseNumber(raw))
}

// appendObject appends object i of d, its members sorted by name.
func (d *doc) appendObject(b []byte, i int32, limit int) ([]byte, error) {
	var small [smallObject]int32
	kids := append(small[:0], d.children(i)...)
	slices.SortFunc(kids, func(x, y int32) int { return bytes.Compare(d.nameOf(x), d.nameOf(y)) })
	b = append(b, '{')
	for j, k := range kids {
		if j > 0 {
			b = append(b, ',')
		}
		if name := d.nameOf(k); jsonSafe(name) {
			b = append(append(append(b, '"'), name...), '"')
		} else {
			b = appendString(b, string(name))
		}
		b = append(b, ':')
		var err error
		if b, err = d.appendNode(b, k, limit); err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, errTooLong
		}
	}
	return append(b, '}'), nil
}

// appendArray appends array i of d.
func (d *doc) appendArray(b []byte, i int32, limit int) ([]byte, error) {
	b = append(b, '[')
	for j, k := range d.children(i) {
		if j > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = d.appendNode(b, k, limit); err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, errTooLong
		}
	}
	return append(b, ']'), nil
}

// jsonSafe reports whether body, the bytes of a JSON string in the event
// (valid UTF-8), is what appendString writes of it decoded: it holds no
// escape and no U+2028 or U+2029 (whose encodings start with 0xE2).
func jsonSafe(body []byte) bool {
	return bytes.IndexByte(body, '\\') < 0 && bytes.IndexByte(body, 0xE2) < 0
}

// plainInt reports whether the JSON number raw is an integer of at most
// 15 digits, which a float64 holds exactly and encoding/json writes as
// it is.
func plainInt(raw []byte) bool {
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 15 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
