package expr

import (
	"bytes"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// What an evaluation may build, beyond the cost limit. cel-go charges a
// call's cost after the call has returned, and charges some calls one
// unit whatever the size of what they read or build: a replace of a
// large string by itself, or a join of many references to one large
// string, built gigabytes before the cost limit could stop it, and a
// loop of size() or == over the event's largest values took seconds
// within the limit. So:
//
//   - replace, join and format (strings extension) compute the size of
//     their result before building it, and fail when it is more than
//     MaxValueBytes (format from a bound of its arguments' formatting);
//   - the calls cel-go charges one unit whatever their operands cost one
//     unit per ten bytes they read or build (sizeTrackers), as its string
//     scans do: size of a string, string comparisons, bytes(string),
//     == and != of strings, bytes, lists and maps, in on a list,
//     math.greatest and math.least of a list, format, strings.quote, and
//     + of a list of the event.
//
// With these, every byte an evaluation builds or reads costs at least a
// tenth of a unit, so one evaluation builds no more than about ten
// CostLimit bytes (10 MB) besides the one call the limit stops, which is
// at most MaxValueBytes; and the transform's output is written no further
// than MaxOutputBytes (appendJSON).

// MaxValueBytes is the longest string replace, join or format may build,
// in bytes: four times the event bound, so that an expression may build
// something a few times the event's size and cut it down.
const MaxValueBytes = 4 << 20

// boundedCalls are the strings extension's overloads whose result may be
// far larger than their operands, with the size of their result.
var boundedCalls = map[string]func(args []ref.Val) int{
	"string_replace_string_string":     replaceSize,
	"string_replace_string_string_int": replaceSize,
	"list_join":                        joinSize,
	"list_join_string":                 joinSize,
	"string_format":                    formatSize,
}

// boundedFunctions are env options redefining, in base, the overloads of
// boundedCalls: each computes its result's size first and fails when it is
// more than MaxValueBytes, else calls the strings extension's.
func boundedFunctions(base *cel.Env) []cel.EnvOption {
	var opts []cel.EnvOption
	for name, fn := range base.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			panic("expr: bindings of " + name + ": " + err.Error())
		}
		for _, od := range fn.OverloadDecls() {
			size, ok := boundedCalls[od.ID()]
			if !ok {
				continue
			}
			impl := bindingOf(bindings, od.ID())
			guarded := cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				if n := size(args); n > MaxValueBytes {
					return types.NewErr("%s would build %d bytes, more than %d", name, n, MaxValueBytes)
				}
				return callOverload(impl, args)
			})
			overload := cel.Overload
			if od.IsMemberFunction() {
				overload = cel.MemberOverload
			}
			opts = append(opts, cel.Function(name, overload(od.ID(), od.ArgTypes(), od.ResultType(), guarded)))
		}
	}
	return opts
}

// bindingOf is the binding of overload id among bindings.
func bindingOf(bindings []*functions.Overload, id string) *functions.Overload {
	for _, b := range bindings {
		if b.Operator == id {
			return b
		}
	}
	panic("expr: no binding for " + id)
}

// callOverload calls o with args, through the binding its arity has.
func callOverload(o *functions.Overload, args []ref.Val) ref.Val {
	switch {
	case len(args) == 1 && o.Unary != nil:
		return o.Unary(args[0])
	case len(args) == 2 && o.Binary != nil:
		return o.Binary(args[0], args[1])
	}
	return o.Function(args...)
}

// replaceSize is the size of s.replace(old, new[, n]); 0 when the
// operands are not those (the call then fails as it did).
func replaceSize(args []ref.Val) int {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 || len(repl) <= len(old) {
		return 0
	}
	count := strings.Count(string(s), string(old))
	if len(args) == 4 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(n) < int64(count) {
			count = int(n)
		}
	}
	return len(s) + count*(len(repl)-len(old))
}

// joinSize is the size of list.join([sep]): its strings and the
// separators between them.
func joinSize(args []ref.Val) int {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0
	}
	n, size := int(l.Size().(types.Int)), 0
	if len(args) == 2 {
		if sep, ok := args[1].(types.String); ok && n > 1 {
			size = (n - 1) * len(sep)
		}
	}
	for i := range n {
		if s, ok := l.Get(types.Int(i)).(types.String); ok {
			size += len(s)
		}
		if size > MaxValueBytes {
			break
		}
	}
	return size
}

// formatSize is a bound of the size of fmt.format(args): the format
// string, and for each argument six times its weight (a string's bytes
// may be written quoted, escaped or in hexadecimal) and a number's
// longest writing.
func formatSize(args []ref.Val) int {
	f, ok1 := args[0].(types.String)
	l, ok2 := args[1].(traits.Lister)
	if !ok1 || !ok2 {
		return 0
	}
	size := len(f)
	for i := range int(l.Size().(types.Int)) {
		size += 6*int(weight(l.Get(types.Int(i)), MaxValueBytes)) + maxNumberText
		if size > MaxValueBytes {
			break
		}
	}
	return size
}

// maxNumberText bounds the writing of a number by format: a double with
// the strings extension's largest precision (100 digits after the point)
// and its 309 digits before it.
const maxNumberText = 420

// weight is about the bytes v holds: a string's or bytes' length, the
// bytes of a value of the event as written, a list's or map's elements'
// weights and one a member, eight for anything else. It stops counting
// past limit (it is at most limit and some), so that it costs no more
// than what it weighs.
func weight(v ref.Val, limit uint64) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x))
	case types.Bytes:
		return uint64(len(x))
	case object:
		return x.weigh(limit)
	case array:
		return x.weigh(limit)
	case traits.Lister:
		var w uint64
		for i := range int64(x.Size().(types.Int)) {
			if w += 1 + weight(x.Get(types.Int(i)), limit-min(w, limit)); w > limit {
				break
			}
		}
		return w
	case traits.Mapper:
		var w uint64
		for it := x.Iterator(); it.HasNext() == types.True && w <= limit; {
			k := it.Next()
			w += 1 + weight(k, limit) + weight(x.Get(k), limit)
		}
		return w
	}
	return 8
}

// weigh is weight of the container, from the doc without decoding it:
// what weight is of its value decoded (TestLazyAsEager holds the lazy and
// eager costs equal).
func (c *container) weigh(limit uint64) uint64 { return c.d.weight(c.i, limit) }

// weight is weight of node i's value, a container's as weight counts a
// list or a map.
func (d *doc) weight(i int32, limit uint64) uint64 {
	n := &d.nodes[i]
	switch d.raw[n.start] {
	case '"':
		if raw := d.raw[n.start:n.end]; bytes.IndexByte(raw, '\\') >= 0 {
			return uint64(len(unquote(raw)))
		}
		return uint64(n.end - n.start - 2)
	case '{', '[':
	default:
		return 8
	}
	var w uint64
	for _, k := range d.children(i) {
		if w += 1 + d.weight(k, limit); d.raw[n.start] == '{' {
			w += uint64(len(d.nameOf(k)))
		}
		if w > limit {
			break
		}
	}
	return w
}

// weightLimit is where weight stops counting for a cost: past it, the
// cost is beyond CostLimit anyway.
const weightLimit = 10 * CostLimit

// scanCost is cel-go's cost of scanning n bytes: one unit per ten, and one
// for the call.
func scanCost(n uint64) *uint64 {
	c := 1 + n/10
	return &c
}

// sizeCost is the cel-go cost estimator (cost.ActualCostEstimator) of
// the calls the comment above names: each costs scanCost of what it reads
// or builds. It goes by the function's name and the operands' runtime
// types (an expression on data, of dynamic type, calls an overload
// chosen at runtime, which has no ID); it has no say (nil) on other
// calls, which cost what cel-go charges.
type sizeCost struct{}

// CallCost is the cost of a call of function with args that gave result,
// or nil.
func (sizeCost) CallCost(function, _ string, args []ref.Val, result ref.Val) *uint64 {
	switch function {
	case "_==_", "_!=_":
		return scanCost(min(weight(args[0], weightLimit), weight(args[1], weightLimit)))
	case "_<_", "_<=_", "_>_", "_>=_":
		if textual(args[0]) && textual(args[1]) {
			return scanCost(min(weight(args[0], weightLimit), weight(args[1], weightLimit)))
		}
	case "size", "bytes", "string":
		if len(args) == 1 && textual(args[0]) {
			return scanCost(weight(args[0], weightLimit))
		}
	case "@in":
		if _, ok := args[1].(traits.Lister); ok {
			return scanCost(weight(args[1], weightLimit))
		}
	case "math.@max", "math.@min": // math.greatest, math.least
		if _, ok := args[0].(traits.Lister); ok && len(args) == 1 {
			return scanCost(weight(args[0], weightLimit))
		}
	case "format", "strings.quote":
		return scanCost(weight(result, weightLimit))
	case "_+_":
		return listsCost(args)
	}
	return nil
}

// textual reports whether v is a string or bytes.
func textual(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Bytes:
		return true
	}
	return false
}

// listsCost is the cost of concatenating two lists: a unit per ten
// elements of the operands but a comprehension's accumulator (which
// grows in place; the event's lists are decoded to be concatenated:
// array.Add), or nil when the operands are not lists.
func listsCost(args []ref.Val) *uint64 {
	var n int64
	for _, a := range args {
		switch l := a.(type) {
		case traits.MutableLister:
		case traits.Lister:
			n += int64(l.Size().(types.Int))
		default:
			return nil
		}
	}
	return scanCost(uint64(n))
}
