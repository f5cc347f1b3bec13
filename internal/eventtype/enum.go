package eventtype

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The validator checks an enum by comparing the value with each member in
// turn, turning both into exact fractions when they are numbers (about a
// microsecond a comparison): an array of 500,000 numbers against an enum
// of 250 took two minutes and 30 GB. hashedEnum checks the same enum with
// one lookup: the schema's enums are moved into it when it compiles.

// hashedEnum is an enum keyword as a set of its members' canonical forms
// (canonical); it answers the validator's own error (kind.Enum).
type hashedEnum struct {
	values []any // as the schema lists them, for the message
	keys   map[string]bool
}

// Validate implements jsonschema.SchemaExt.
func (e *hashedEnum) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if !e.keys[canonical(v)] {
		ctx.AddError(&kind.Enum{Got: v, Want: e.values})
	}
}

// hashEnums moves the enum of each of root's schemas (reachable, and its
// own: not a draft's metaschema, which every compiler shares) into a
// hashedEnum.
func hashEnums(root *jsonschema.Schema) {
	eachSchema(root, func(s *jsonschema.Schema) bool {
		if s.Enum == nil || strings.Contains(s.Location, "json-schema.org/") {
			return false
		}
		e := &hashedEnum{values: s.Enum.Values, keys: make(map[string]bool, len(s.Enum.Values))}
		for _, v := range s.Enum.Values {
			e.keys[canonical(v)] = true
		}
		s.Enum = nil
		s.Extensions = append(s.Extensions, e)
		return false
	})
}

// canonical returns v's canonical form: equal JSON values (as JSON Schema
// compares them: 1 and 1.0 equal, members in any order) have the same.
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteByte('n')
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case []any:
		b.WriteByte('[')
		for _, item := range v {
			writeCanonical(b, item)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, v[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default: // a number (json.Number, or a Go number)
		if r, ok := new(big.Rat).SetString(fmt.Sprint(v)); ok {
			b.WriteString("#" + r.RatString())
		} else {
			b.WriteString("?" + fmt.Sprint(v))
		}
	}
}

// eachSchema calls fn with root and every schema reachable from it, each
// once (in breadth-first order) until fn returns true; it reports whether
// one did.
func eachSchema(root *jsonschema.Schema, fn func(*jsonschema.Schema) bool) bool {
	seen := map[*jsonschema.Schema]bool{}
	queue := []*jsonschema.Schema{root}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == nil || seen[s] {
			continue
		}
		seen[s] = true
		if fn(s) {
			return true
		}
		queue = append(append(queue, inPlace(s)...), descending(s)...)
	}
	return false
}
