package expr

import (
	"fmt"
	"reflect"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/go-json-experiment/json/jsontext"
)

// The event as expressions read it without decoding it first: an object
// of a doc is a CEL map (object), an array a CEL list (array), and a
// member or element is decoded only when the expression reads it, each
// time it does (nothing is cached: the values are shared by concurrent
// evaluations). They behave as the eager values did (the map and list
// cel-go makes of a map[string]any and an []any: see NewInput):
// lookups, has(), in, size, equality, the macros, conversions and their
// errors (TestLazyAsEager).

// val is node i as a CEL value: a map, a list, a string, a double (JSON
// numbers are doubles: one beyond float64's range is ±Inf, or 0 when too
// small, as numbersToFloat makes it), a bool or null.
func (d *doc) val(i int32) ref.Val {
	n := &d.nodes[i]
	raw := d.raw[n.start:n.end]
	switch raw[0] {
	case '{':
		return object{d.container(i)}
	case '[':
		return array{d.container(i)}
	case '"':
		return types.String(d.str(i))
	case 't':
		return types.True
	case 'f':
		return types.False
	case 'n':
		return types.NullValue
	}
	return types.Double(parseNumber(raw))
}

// native is node i as encoding/json decodes into an any (with numbers as
// float64): the Go value of the eager path, for what only a Go value
// serves (ConvertToNative, Value).
func (d *doc) native(i int32) any {
	n := &d.nodes[i]
	raw := d.raw[n.start:n.end]
	switch raw[0] {
	case '{':
		m := make(map[string]any, n.n)
		for _, k := range d.kids[n.kids : n.kids+n.n] {
			m[string(d.nameOf(k))] = d.native(k)
		}
		return m
	case '[':
		l := make([]any, n.n)
		for j, k := range d.kids[n.kids : n.kids+n.n] {
			l[j] = d.native(k)
		}
		return l
	case 'n':
		return nil
	}
	return d.val(i).Value()
}

// celNative is node i as the CEL value cel-go makes of its Go value.
func (d *doc) celNative(i int32) ref.Val {
	return types.DefaultTypeAdapter.NativeToValue(d.native(i))
}

// str is string node i, decoded: a string of the document's own bytes
// when it has no escape (view; the scan noted which have one, so that
// reading a long string does not search it), a new one otherwise.
func (d *doc) str(i int32) string {
	n := &d.nodes[i]
	if n.n == 0 {
		return view(d.raw[n.start+1 : n.end-1])
	}
	b, _ := jsontext.AppendUnquote(nil, d.raw[n.start:n.end])
	return string(b)
}

// parseNumber is the valid JSON number raw as the nearest float64 (±Inf
// beyond its range).
func parseNumber(raw []byte) float64 {
	f, _ := strconv.ParseFloat(string(raw), 64)
	return f
}

// children is container i's children (indexes of nodes).
func (d *doc) children(i int32) []int32 {
	n := &d.nodes[i]
	return d.kids[n.kids : n.kids+n.n]
}

// container is an object or an array of a doc: what their CEL values share.
type container struct {
	d *doc
	i int32
}

// ConvertToNative is the container as cel-go converts its Go value (a
// map[string]any or an []any).
func (c container) ConvertToNative(t reflect.Type) (any, error) {
	return c.d.celNative(c.i).ConvertToNative(t)
}

// Value is the container as a map[string]any or an []any (decoded in
// full).
func (c container) Value() any { return c.d.native(c.i) }

// String formats the container as cel-go formats its Go value.
func (c container) String() string { return fmt.Sprint(c.d.celNative(c.i)) }

// object is a JSON object of a doc as a CEL map with string keys.
type object struct{ *container }

var _ traits.Mapper = object{}

// Find is the member named key (a string; any other key is not found).
func (o object) Find(key ref.Val) (ref.Val, bool) {
	s, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return o.find(string(s))
}

// FindStringKey is Find for a string key: cel-go's interpreter calls it
// for data.name without making a CEL string of name.
func (o object) FindStringKey(name string) (any, bool) { return o.find(name) }

func (o object) find(name string) (ref.Val, bool) {
	k := o.d.member(o.i, name)
	if k < 0 {
		return nil, false
	}
	return o.d.val(o.d.kids[k]), true
}

// Get is the member named key, or CEL's "no such key" error.
func (o object) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains reports whether the object has a member named key.
func (o object) Contains(key ref.Val) ref.Val {
	_, found := o.Find(key)
	return types.Bool(found)
}

// Size is the number of members.
func (o object) Size() ref.Val { return types.Int(o.d.nodes[o.i].n) }

// IsZeroValue reports whether the object has no member.
func (o object) IsZeroValue() bool { return o.d.nodes[o.i].n == 0 }

// Iterator ranges over the member names, in document order.
func (o object) Iterator() traits.Iterator {
	return &iterator{d: o.d, kids: o.d.children(o.i), names: true}
}

// Fold hands each member (name and value) to f, in document order, until
// it answers false; only the names when f folds keys only.
func (o object) Fold(f traits.Folder) {
	keysOnly := false
	if kf, ok := f.(interface{ FoldKeyOnly() bool }); ok {
		keysOnly = kf.FoldKeyOnly()
	}
	for _, k := range o.d.children(o.i) {
		var v ref.Val
		if !keysOnly {
			v = o.d.val(k)
		}
		if !f.FoldEntry(types.String(view(o.d.nameOf(k))), v) {
			return
		}
	}
}

// Equal is CEL's map equality: other is a map of the same size with the
// same keys and equal values.
func (o object) Equal(other ref.Val) ref.Val {
	m, ok := other.(traits.Mapper)
	if !ok || o.Size() != m.Size() {
		return types.False
	}
	for _, k := range o.d.children(o.i) {
		ov, found := m.Find(types.String(view(o.d.nameOf(k))))
		if !found || types.Equal(o.d.val(k), ov) == types.False {
			return types.False
		}
	}
	return types.True
}

// ConvertToType is the object itself as a map, its type as a type, and an
// error to anything else.
func (o object) ConvertToType(t ref.Type) ref.Val { return convertTo(o, types.MapType, t) }

// convertTo is v, of type own, converted to t as cel-go converts a map or
// a list: v itself to own, own to type, an error to anything else.
func convertTo(v ref.Val, own *types.Type, t ref.Type) ref.Val {
	switch t {
	case own:
		return v
	case types.TypeType:
		return own
	}
	return types.NewErr("type conversion error from '%s' to '%s'", own, t)
}

// Type is CEL's map type.
func (o object) Type() ref.Type { return types.MapType }
