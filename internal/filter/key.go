package filter

// Key is one compiled key in the advanced filters' key syntax (a
// CloudEvents attribute or extension name, or data.<name>[.<name>...]),
// for readers other than filters (a subscription's dynamic_headers). It
// reads an Event as filters do: lazily, the payload parsed at most once.
// A Key is immutable and safe for concurrent use.
type Key struct {
	c cond
}

// CompileKey checks key as a filter's key is checked; a problem is a
// *FieldError naming field.
func CompileKey(key, field string) (*Key, *FieldError) {
	k := &Key{}
	if err := k.c.compileKey(key, field); err != nil {
		return nil, err
	}
	return k, nil
}

// String is the key as written.
func (k *Key) String() string { return k.c.key }

// Value returns the key's value in e and whether the key is present, with
// the types Event describes; a present data.* key may hold nil (JSON null).
// An attribute set to null is missing.
func (k *Key) Value(e *Event) (any, bool) { return e.lookup(&k.c) }
