package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// This file holds the single pass of parseObject: each member of an event
// object, whose raw JSON value is taken as it stands in the body (the body
// was checked to be valid JSON first), set on the Event.

// setMember sets the member key, whose value val is valid raw JSON other
// than null, on e; it returns why the member is refused, or "".
func (e *Event) setMember(name, val []byte) string {
	switch attr := string(name); attr {
	case attrSpecVersion, attrID, attrSource, attrType, attrSubject, attrDataContentType, attrDataSchema, attrTime:
		s, d := jsonString(val)
		if d != "" {
			return d
		}
		return e.setAttr(attr, s)
	case memberData:
		e.Data = compactJSON(val)
	case memberDataBase64:
		s, d := jsonString(val)
		if d == notString {
			d = "must be a base64 string"
		}
		if d != "" {
			return d
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "not valid base64: " + err.Error()
		}
		e.DataBase64 = base64.StdEncoding.EncodeToString(b)
	default:
		if d := checkExtensionName(attr); d != "" {
			return d
		}
		var v any
		switch val[0] {
		case '"':
			s, d := jsonString(val)
			if d != "" {
				return d
			}
			v = s
		case 't':
			v = true
		case 'f':
			v = false
		case '{', '[':
			return "extension values must be a string, number or boolean"
		default:
			v = json.Number(val)
		}
		if e.Extensions == nil {
			e.Extensions = make(map[string]any)
		}
		e.Extensions[attr] = v
	}
	return ""
}

// setAttr sets the context attribute attr (one of those CloudEvents
// defines) to its string value v, whether it came from a JSON member or a
// binary-mode header; it returns why v is refused, or "". The optional
// attributes must not be empty when present; time must be RFC 3339.
func (e *Event) setAttr(attr, v string) string {
	switch attr {
	case attrSubject, attrDataContentType, attrDataSchema, attrTime:
		if v == "" {
			return "must not be empty when present"
		}
	}
	switch attr {
	case attrSpecVersion:
		e.SpecVersion = v
	case attrID:
		e.ID = v
	case attrSource:
		e.Source = v
	case attrType:
		e.Type = v
	case attrSubject:
		e.Subject = v
	case attrDataContentType:
		e.DataContentType = v
	case attrDataSchema:
		e.DataSchema = v
	case attrTime:
		t, d := parseTime(v)
		if d != "" {
			return d
		}
		e.Time = t
	}
	return ""
}

// compactJSON returns val, valid JSON, without whitespace outside its
// strings: val itself (capacity cut to its length, so that nothing appends
// into the body it points into) when it has none, the usual case, else a
// compacted copy.
func compactJSON(val []byte) []byte {
	if isCompact(val) {
		return val[:len(val):len(val)]
	}
	var buf bytes.Buffer
	buf.Grow(len(val))
	_ = json.Compact(&buf, val) // val is valid JSON: cannot fail
	return buf.Bytes()
}

// isCompact reports whether val, valid JSON, has no whitespace outside its
// strings.
func isCompact(val []byte) bool {
	for i := 0; i < len(val); i++ {
		switch val[i] {
		case ' ', '\t', '\r', '\n':
			return false
		case '"':
			end, _ := scanString(val, i)
			if end < 0 {
				return false
			}
			i = end - 1
		}
	}
	return true
}

// memberSet is the set of member names an object has shown so far: a short
// list of the names (slices of the body: no copy), and a map once an object
// has many members (so that a body of thousands of members costs no
// quadratic time).
type memberSet struct {
	few  [16][]byte
	n    int
	many map[string]bool
}

// add adds name and reports whether it was not there before.
func (m *memberSet) add(name []byte) bool {
	if m.many != nil {
		if m.many[string(name)] {
			return false
		}
		m.many[string(name)] = true
		return true
	}
	for _, s := range m.few[:m.n] {
		if string(s) == string(name) {
			return false
		}
	}
	if m.n < len(m.few) {
		m.few[m.n] = name
		m.n++
		return true
	}
	m.many = make(map[string]bool, 2*len(m.few))
	for _, s := range m.few {
		m.many[string(s)] = true
	}
	m.many[string(name)] = true
	return true
}

// arrayElements returns the raw elements of p, a valid JSON array (leading
// whitespace removed).
func arrayElements(p []byte) [][]byte {
	var out [][]byte
	i := skipWS(p, 1)
	if i < len(p) && p[i] == ']' {
		return out
	}
	for i < len(p) {
		end := scanValue(p, i)
		if end < 0 {
			return out // cannot happen for valid JSON
		}
		out = append(out, p[i:end])
		i = skipWS(p, end)
		if i >= len(p) || p[i] != ',' {
			return out
		}
		i = skipWS(p, i+1)
	}
	return out
}
