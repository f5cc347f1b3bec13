package expr

import (
	"encoding/base64"
	"errors"
	"fmt"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Input is one event as expressions read it (the package comment's event
// and data), built once and read by any number of evaluations, at once
// too: it is immutable.
type Input struct {
	// event and data are the variables: CEL values of the doc (lazy.go),
	// or Go values cel-go converts (the eager path).
	event, data any
	// doc is the payload's index (nil: it was decoded eagerly): own, made
	// with the Input in one allocation.
	doc *doc
	own doc
}

// activation is an Input as cel-go's interpreter reads its variables
// (interpreter.Activation): a conversion of the Input's pointer, so that an
// evaluation allocates nothing to name them.
type activation Input

// ResolveName is the variable named name: event or data.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "event":
		return a.event, true
	case "data":
		return a.data, true
	}
	return nil, false
}

// Parent is nil: an Input has no enclosing scope.
func (a *activation) Parent() interpreter.Activation { return nil }

// vars is in as the activation of an evaluation.
func (in *Input) vars() *activation { return (*activation)(in) }

// NewInput returns the Input of the event whose stored payload (a
// CloudEvent in structured-mode JSON) is payload. It fails when payload is
// not a JSON object or its data_base64 is not base64.
//
// It indexes payload in one pass (indexJSON) and decodes nothing more:
// an expression decodes the members it reads when it reads them (lazy.go),
// so a transform that reads four members of a large event does not pay
// for the rest. A payload the index does not take (see indexJSON) is
// decoded whole into Go values instead (newEagerInput), with the same
// result. payload must not change while the Input is used: its values
// are read from it.
func NewInput(payload []byte) (*Input, error) {
	in := new(Input)
	if !in.own.index(payload) || payload[in.own.nodes[0].start] != '{' {
		return newEagerInput(payload)
	}
	in.doc = &in.own
	if err := in.read(); err != nil {
		return nil, err
	}
	return in, nil
}

// read sets the variables of the event in.doc indexes, a JSON object:
// event is a map of its members but data, data_base64 and those that are
// null; data is its data member, or the bytes of its data_base64 (the last
// of them when it has both), or null.
func (in *Input) read() error {
	d := in.doc
	attrs := make([]int32, 0, d.nodes[0].n)
	var data ref.Val = types.NullValue
	for _, k := range d.children(0) {
		raw, name := d.raw[d.nodes[k].start:d.nodes[k].end], d.nameOf(k)
		switch {
		case raw[0] == 'n':
		case string(name) == "data":
			data = d.val(k)
		case string(name) == "data_base64":
			if raw[0] != '"' {
				return errBase64NotString
			}
			b, err := decodeBase64(d.str(k))
			if err != nil {
				return err
			}
			data = types.Bytes(b)
		default:
			attrs = append(attrs, k)
		}
	}
	in.event, in.data = object{d.container(d.addObject(0, attrs))}, data
	return nil
}

// Members is the number of top-level members of the payload, from the
// index NewInput made, or -1 for a payload decoded eagerly (it has no
// index: the caller reads the payload itself). With Member, it is
// event.DataHead's walk of the members, without a second reading of
// the payload.
func (in *Input) Members() int {
	if in.doc == nil {
		return -1
	}
	return int(in.doc.nodes[0].n)
}

// Member is the j-th top-level member of the payload (0 <= j < Members):
// its name, its key as written (quoted) and its value as written.
func (in *Input) Member(j int) (name, key, val []byte) {
	d := in.doc
	k := d.children(0)[j]
	n := &d.nodes[k]
	return d.nameOf(k), d.raw[n.name:n.nameEnd], d.raw[n.start:n.end]
}

// errBase64NotString is a data_base64 member that is not a string.
var errBase64NotString = errors.New("expr: data_base64 is not a string")

// decodeBase64 is the bytes of a data_base64 member, s.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("expr: data_base64: %w", err)
	}
	return b, nil
}
