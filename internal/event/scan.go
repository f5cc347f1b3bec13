package event

import (
	"bytes"
	"errors"
)

// This file reads a stored payload (Event.Marshal's output) in one pass
// without building an Event: the encoders need only the raw JSON of each
// member, most of which they copy to their output unchanged.

// ErrMalformedPayload is wrapped by the error Encode and EncodeDeadLetter
// return for a payload that is not a CloudEvent in structured-mode JSON (a
// stored event that is corrupt: retrying will not help).
var ErrMalformedPayload = errors.New("malformed payload")

// rawMember is one top-level member of a JSON object: its name (the raw
// content of the key's string literal, or the decoded name when the key has
// escapes) and its value as raw JSON.
type rawMember struct {
	name []byte
	key  []byte // the key's string literal, quotes included, as written
	val  []byte
}

// view is a stored event seen through the raw JSON of its members. The
// string attributes hold JSON string literals, quotes included, exactly as
// stored; absent attributes (and JSON null values) are nil.
type view struct {
	specVersion, id, source, typ, subject, dataContentType, dataSchema, time []byte
	// data is the raw JSON value of "data"; dataBase64 the string literal
	// of "data_base64".
	data, dataBase64 []byte
	// ext holds the extension members in payload order (name order for
	// Marshal's output).
	ext []rawMember
	// extBuf holds the first few extensions without an allocation.
	extBuf [4]rawMember
}

// decode reads p, which must be one JSON object holding a CloudEvent in
// structured mode, into v (whose slices then point into p). It checks the
// structure it walks (strings terminated, brackets balanced, members
// separated) and that the context attributes are strings and the required
// ones present, but not every byte of the values it skips over: the payload
// is Herald's own stored Marshal output, and the check is there to fail
// loudly on a corrupt one, not to validate input. The error wraps
// ErrMalformedPayload.
func (v *view) decode(p []byte) error {
	*v = view{}
	v.ext = v.extBuf[:0]
	var err error
	ok := forEachMember(p, func(name, key, val []byte) bool {
		err = v.set(name, key, val)
		return err == nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return payloadErr("not one well-formed JSON object")
	}
	if v.specVersion == nil || v.id == nil || v.source == nil || v.typ == nil {
		return payloadErr("specversion, id, source and type are required")
	}
	return nil
}

// forEachMember calls fn with the name (decoded), the key literal and the
// raw value of each top-level member of the JSON object p, in order, until
// fn returns false. It returns false when p is not one well-formed object
// (p is expected to be valid JSON; the check is a guard, not validation).
func forEachMember(p []byte, fn func(name, key, val []byte) bool) bool {
	i := skipWS(p, 0)
	if i >= len(p) || p[i] != '{' {
		return false
	}
	i = skipWS(p, i+1)
	if i < len(p) && p[i] == '}' {
		return skipWS(p, i+1) == len(p)
	}
	for {
		if i >= len(p) || p[i] != '"' {
			return false
		}
		kEnd, esc := scanString(p, i)
		if kEnd < 0 {
			return false
		}
		key := p[i:kEnd]
		name := key[1 : len(key)-1]
		if esc {
			s, d := jsonString(key)
			if d != "" {
				return false
			}
			name = []byte(s)
		}
		i = skipWS(p, kEnd)
		if i >= len(p) || p[i] != ':' {
			return false
		}
		i = skipWS(p, i+1)
		end := scanValue(p, i)
		if end < 0 {
			return false
		}
		if !fn(name, key, p[i:end]) {
			return true
		}
		i = skipWS(p, end)
		if i < len(p) && p[i] == ',' {
			i = skipWS(p, i+1)
			continue
		}
		return i < len(p) && p[i] == '}' && skipWS(p, i+1) == len(p)
	}
}

// set records one member.
func (v *view) set(name, key, val []byte) error {
	if string(val) == "null" {
		return nil // absent, as the JSON format says
	}
	var dst *[]byte
	switch string(name) {
	case attrSpecVersion:
		dst = &v.specVersion
	case attrID:
		dst = &v.id
	case attrSource:
		dst = &v.source
	case attrType:
		dst = &v.typ
	case attrSubject:
		dst = &v.subject
	case attrDataContentType:
		dst = &v.dataContentType
	case attrDataSchema:
		dst = &v.dataSchema
	case attrTime:
		dst = &v.time
	case memberDataBase64:
		dst = &v.dataBase64
	case memberData:
		v.data = val
		return nil
	default:
		if val[0] == '{' || val[0] == '[' {
			return payloadErr("extension " + quote(string(name)) + " is not a string, number or boolean")
		}
		v.ext = append(v.ext, rawMember{name: name, key: key, val: val})
		return nil
	}
	if val[0] != '"' {
		return payloadErr("member " + quote(string(name)) + " is not a string")
	}
	*dst = val
	return nil
}

func payloadErr(detail string) error {
	return &payloadError{detail}
}

type payloadError struct{ detail string }

func (e *payloadError) Error() string { return ErrMalformedPayload.Error() + ": " + e.detail }
func (e *payloadError) Unwrap() error { return ErrMalformedPayload }

// skipWS returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(p []byte, i int) int {
	for i < len(p) {
		switch p[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index just past the string literal starting at
// p[i] (a quote) and whether it holds escapes; -1 when it is unterminated or
// holds a raw control character.
func scanString(p []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(p); j++ {
		for j < len(p) && jsonClass[p[j]]&classPlain != 0 {
			j++ // the plain bytes, most of a string, a table lookup each
		}
		if j == len(p) {
			break
		}
		switch c := p[j]; {
		case c == '"':
			return j + 1, esc
		case c == '\\':
			esc = true
			j++
		default: // a control character
			return -1, esc
		}
	}
	return -1, esc
}

// scanValue returns the index just past the JSON value starting at p[i], or
// -1. Objects and arrays are skipped by counting brackets outside strings;
// literals by their characters.
func scanValue(p []byte, i int) int {
	if i >= len(p) {
		return -1
	}
	switch p[i] {
	case '"':
		end, _ := scanString(p, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(p); j++ {
			switch p[j] {
			case '"':
				end, _ := scanString(p, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(p) && isLiteralByte(p[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// isLiteralByte reports whether c may occur in a JSON number, true, false or
// null.
func isLiteralByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E'
}

// literalText returns the text of a raw JSON value as a CloudEvents
// attribute's string form: a string literal decoded, any other value (a
// number or a boolean) as written.
func literalText(val []byte) string {
	if len(val) > 0 && val[0] == '"' {
		s, _ := jsonString(val)
		return s
	}
	return string(val)
}

// appendAsJSONString appends val, a raw JSON string, number or boolean, as a
// JSON string: a string literal is copied as stored, other values are
// quoted (their text needs no escaping).
func appendAsJSONString(b, val []byte) []byte {
	if len(val) > 0 && val[0] == '"' {
		return append(b, val...)
	}
	b = append(b, '"')
	b = append(b, val...)
	return append(b, '"')
}

// isJSONStringLiteral reports whether val is a JSON string.
func isJSONStringLiteral(val []byte) bool {
	return len(val) > 0 && val[0] == '"'
}

// hasBackslash reports whether the literal holds an escape.
func hasBackslash(val []byte) bool { return bytes.IndexByte(val, '\\') >= 0 }
