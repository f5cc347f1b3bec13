package expr

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// array is a JSON array of a doc as a CEL list (lazy.go).
type array struct{ *container }

var _ traits.Lister = array{}

// Get is the element at index, or CEL's error for a bad or out-of-range
// index.
func (a array) Get(index ref.Val) ref.Val {
	i, err := types.GetOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	kids := a.d.children(a.i)
	if i < 0 || i >= len(kids) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, len(kids))
	}
	return a.d.val(kids[i])
}

// GetInt64Index is the element at i: cel-go's interpreter calls it for
// data.list[0] without making a CEL int of the index.
func (a array) GetInt64Index(i int64) (any, bool) {
	kids := a.d.children(a.i)
	if i < 0 || i >= int64(len(kids)) {
		return nil, false
	}
	return a.d.val(kids[i]), true
}

// Contains reports whether an element equals elem.
func (a array) Contains(elem ref.Val) ref.Val {
	for _, k := range a.d.children(a.i) {
		if b, ok := elem.Equal(a.d.val(k)).(types.Bool); ok && b == types.True {
			return types.True
		}
	}
	return types.False
}

// Size is the number of elements.
func (a array) Size() ref.Val { return types.Int(a.d.nodes[a.i].n) }

// IsZeroValue reports whether the array is empty.
func (a array) IsZeroValue() bool { return a.d.nodes[a.i].n == 0 }

// Iterator ranges over the elements.
func (a array) Iterator() traits.Iterator {
	return &iterator{d: a.d, kids: a.d.children(a.i)}
}

// Fold hands each element (index and value) to f until it answers false.
func (a array) Fold(f traits.Folder) {
	for j, k := range a.d.children(a.i) {
		if !f.FoldEntry(j, a.d.val(k)) {
			return
		}
	}
}

// Add is the concatenation of the array and other (a list), as cel-go
// concatenates lists.
func (a array) Add(other ref.Val) ref.Val {
	return a.d.celNative(a.i).(traits.Lister).Add(other)
}

// Equal is CEL's list equality: other is a list of the same size whose
// elements are equal, in order.
func (a array) Equal(other ref.Val) ref.Val {
	l, ok := other.(traits.Lister)
	if !ok || a.Size() != l.Size() {
		return types.False
	}
	for j, k := range a.d.children(a.i) {
		if types.Equal(a.d.val(k), l.Get(types.Int(j))) == types.False {
			return types.False
		}
	}
	return types.True
}

// ConvertToType is the array itself as a list, its type as a type, and an
// error to anything else.
func (a array) ConvertToType(t ref.Type) ref.Val { return convertTo(a, types.ListType, t) }

// Type is CEL's list type.
func (a array) Type() ref.Type { return types.ListType }

// iterator ranges over a container's children: an object's member names
// (names), or an array's elements.
type iterator struct {
	d     *doc
	kids  []int32
	names bool
}

// HasNext reports whether Next has a child to give.
func (it *iterator) HasNext() ref.Val { return types.Bool(len(it.kids) > 0) }

// Next is the next child (nil after the last).
func (it *iterator) Next() ref.Val {
	if len(it.kids) == 0 {
		return nil
	}
	k := it.kids[0]
	it.kids = it.kids[1:]
	if it.names {
		return types.String(view(it.d.nameOf(k)))
	}
	return it.d.val(k)
}

// ConvertToNative fails: an iterator is no value.
func (*iterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}

// ConvertToType fails: an iterator is no value.
func (*iterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }

// Equal fails: an iterator is no value.
func (*iterator) Equal(ref.Val) ref.Val { return types.NewErr("no such overload") }

// Type is CEL's iterator type.
func (*iterator) Type() ref.Type { return types.IteratorType }

// Value is nil.
func (*iterator) Value() any { return nil }
