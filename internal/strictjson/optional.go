package strictjson

import "reflect"

// Optional is a member of a change (a PATCH body) that tells its three
// cases apart: absent (Set false: keep what is stored), null (Set, Value
// nil: remove it) and a value (Set, Value decoded strictly, as Decode
// decodes any member, its problems named from the member's path).
type Optional[T any] struct {
	Set   bool
	Value *T
}

// Remove is the Optional of a change that removes the member (null).
func Remove[T any]() Optional[T] { return Optional[T]{Set: true} }

// Given is the Optional of a change that sets the member to v.
func Given[T any](v *T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Or is the member after the change of was: was when absent, else the
// change's value (nil for null).
func (o Optional[T]) Or(was *T) *T {
	if !o.Set {
		return was
	}
	return o.Value
}

// target is how bindJSON finds an Optional's fields.
func (o *Optional[T]) target() (*bool, reflect.Value) {
	return &o.Set, reflect.ValueOf(&o.Value).Elem()
}

// optional is implemented by every *Optional[T].
type optional interface {
	target() (*bool, reflect.Value)
}
