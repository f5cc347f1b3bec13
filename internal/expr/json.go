package expr

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// appendJSON appends the CEL value v to b as JSON, byte for byte as
// encoding/json (without HTML escaping) writes the Go value v was
// (TestJSONAsEncodingJSON): map keys sorted, whole doubles without a
// fraction, exponents beyond 1e21 and below 1e-6. Bytes become base64,
// timestamps RFC 3339 (UTC) and durations seconds with an "s" suffix
// (google.protobuf.Value's JSON mapping). It refuses a map key that is not
// a string, a NaN or infinite number, an optional value (saying how to
// unwrap it), and any other type. Members and
// elements of the event (lazy.go) are written from its bytes, decoding
// only what is not already written as encoding/json would write it. It
// stops with errTooLong once b is longer than limit after a member or an
// element: a result may be far larger than it is worth writing (a list
// of many references to one large string), and that is found out before
// it is written.
func appendJSON(b []byte, v ref.Val, limit int) ([]byte, error) {
	switch x := v.(type) {
	case object:
		return x.d.appendNode(b, x.i, limit)
	case array:
		return x.d.appendNode(b, x.i, limit)
	case types.Null:
		return append(b, "null"...), nil
	case types.Bool:
		return strconv.AppendBool(b, bool(x)), nil
	case types.Int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case types.Uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case types.Double:
		return appendFloat(b, float64(x))
	case types.String:
		return appendString(b, string(x)), nil
	case types.Bytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, x)
		return append(b, '"'), nil
	case types.Timestamp:
		return appendString(b, x.UTC().Format(time.RFC3339Nano)), nil
	case types.Duration:
		return appendString(b, strconv.FormatFloat(x.Seconds(), 'f', -1, 64)+"s"), nil
	case traits.Mapper:
		return appendMap(b, x, limit)
	case traits.Lister:
		return appendList(b, x, limit)
	case *types.Optional:
		return nil, errors.New("the result holds an optional value, which JSON cannot carry: unwrap it with .value() or .orValue(…)")
	}
	return nil, fmt.Errorf("the result holds a %s, which JSON cannot carry", v.Type().TypeName())
}

// errTooLong is appendJSON's output grown beyond its limit.
var errTooLong = errors.New("the output is too long")

// appendMap appends the CEL map m, its keys sorted.
func appendMap(b []byte, m traits.Mapper, limit int) ([]byte, error) {
	c := collectors.Get().(*entryCollector)
	defer c.release()
	types.ToFoldableMap(m).Fold(c)
	if c.err != nil {
		return nil, c.err
	}
	slices.SortFunc(c.entries, func(x, y mapEntry) int { return strings.Compare(x.key, y.key) })
	b = append(b, '{')
	for i, e := range c.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, e.key), ':')
		var err error
		if b, err = appendJSON(b, e.val, limit); err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, errTooLong
		}
	}
	return append(b, '}'), nil
}

// collectors holds entryCollectors for appendMap to reuse.
var collectors = sync.Pool{New: func() any { return new(entryCollector) }}

// release empties c and gives it back to collectors, unless it grew
// beyond smallObject entries (a large map's room is not kept).
func (c *entryCollector) release() {
	clear(c.entries)
	c.entries, c.err = c.entries[:0], nil
	if cap(c.entries) <= smallObject {
		collectors.Put(c)
	}
}

// mapEntry is a member of a CEL map.
type mapEntry struct {
	key string
	val ref.Val
}

// entryCollector is a traits.Folder that collects a map's entries, or
// the error of its first key that is not a string. A fold may hand it Go
// values (cel-go's maps of Go values do): they are converted as cel-go
// converts them.
type entryCollector struct {
	entries []mapEntry
	err     error
}

// FoldEntry collects the entry, or stops the fold at a key that is not a
// string.
func (c *entryCollector) FoldEntry(key, val any) bool {
	k, ok := celValue(key).(types.String)
	if !ok {
		c.err = fmt.Errorf("the result holds a map key of type %s, not a string", celValue(key).Type().TypeName())
		return false
	}
	c.entries = append(c.entries, mapEntry{key: string(k), val: celValue(val)})
	return true
}

// celValue is v as a CEL value.
func celValue(v any) ref.Val {
	if r, ok := v.(ref.Val); ok {
		return r
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// appendList appends the CEL list l.
func appendList(b []byte, l traits.Lister, limit int) ([]byte, error) {
	n := int64(l.Size().(types.Int))
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, l.Get(types.Int(i)), limit); err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, errTooLong
		}
	}
	return append(b, ']'), nil
}

// appendFloat appends f as encoding/json writes a float64, or refuses a
// NaN or an infinity.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("the result holds %v, which JSON cannot carry", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping: '"', '\\' and control characters,
// U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		esc, size := escapeAt(s, i)
		if esc == "" {
			i += size
			continue
		}
		b = append(append(b, s[start:i]...), esc...)
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// escapeAt is how appendString writes the character at s[i] (not a
// printable ASCII character other than '"' and '\\'), "" when as it is,
// and its size in bytes.
func escapeAt(s string, i int) (esc string, size int) {
	switch c := s[i]; {
	case c == '"' || c == '\\':
		return `\` + string(c), 1
	case c == '\n':
		return `\n`, 1
	case c == '\r':
		return `\r`, 1
	case c == '\t':
		return `\t`, 1
	case c < 0x20:
		return `\u00` + string(hex[c>>4]) + string(hex[c&0xF]), 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`, 1
	case r == '\u2028':
		return `\u2028`, size
	case r == '\u2029':
		return `\u2029`, size
	}
	return "", size
}

const hex = "0123456789abcdef"
