package expr

import (
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// What an evaluation may build or do, beyond the cost limit. cel-go
// charges a call's cost after the call has returned, and charges some
// calls one unit whatever the size of what they read or build: a replace
// of a large string by itself, or a join of many references to one large
// string, built gigabytes before the cost limit could stop it, a 4 KB
// regular expression matched a 1 MiB string for 14 s in one call, and a
// loop of size() or == over the event's largest values took seconds
// within the limit. So:
//
//   - replace, join and format (strings extension) compute the size of
//     their result before building it, and fail when it is more than
//     MaxValueBytes (format from a bound of its arguments' formatting:
//     boundedCalls);
//   - matches fails, before it runs, on a regular expression longer than
//     MaxPatternBytes or a match that would cost more than CostLimit
//     (boundedMatches);
//   - the calls cel-go charges one unit whatever their operands cost one
//     unit per ten bytes they read or build (sizeCost), as its string
//     scans do: size of a string, string comparisons, bytes(string),
//     == and != of strings, bytes, lists and maps, in on a list,
//     math.greatest and math.least of a list, format, strings.quote, and
//     + of lists (a unit per ten elements); matches pays for compiling
//     its regular expression, a unit a byte.
//
// With these, every byte an evaluation builds or reads costs at least a
// tenth of a unit, so one evaluation builds no more than about ten
// CostLimit bytes (10 MB) besides the one call the limit stops, which is
// at most MaxValueBytes; and the transform's output is written no further
// than MaxOutputBytes (appendJSON). A unit takes 5 to 700 ns (measured on
// a loaded machine; most expressions 50 to 150): an evaluation at the
// cost limit runs for tens to hundreds of milliseconds.

// MaxValueBytes is the longest string replace, join or format may build,
// in bytes: four times the event bound, so that an expression may build
// something a few times the event's size and cut it down.
const MaxValueBytes = 4 << 20

// MaxPatternBytes is the longest regular expression matches takes, in
// bytes: the longest an expression could write itself.
const MaxPatternBytes = MaxSourceBytes

// boundedCalls are the overloads whose work or result may be far larger
// than cel-go charges before it calls them, with their check: an error
// (a CEL error value) when the call would go past its bound, else nil.
var boundedCalls = map[string]func(name string, args []ref.Val) ref.Val{
	"string_replace_string_string":     sizeCheck(replaceSize),
	"string_replace_string_string_int": sizeCheck(replaceSize),
	"list_join":                        sizeCheck(joinSize),
	"list_join_string":                 sizeCheck(joinSize),
	"string_format":                    sizeCheck(formatSize),
}

// sizeCheck is the check of a call whose result's size is size: more than
// MaxValueBytes fails.
func sizeCheck(size func(args []ref.Val) int) func(string, []ref.Val) ref.Val {
	return func(name string, args []ref.Val) ref.Val {
		if n := size(args); n > MaxValueBytes {
			return types.NewErr("%s would build %d bytes, more than %d", name, n, MaxValueBytes)
		}
		return nil
	}
}

// boundedMatches is the cel-go program decorator that checks each call
// of matches before it runs (matchesCheck): matches has one binding for
// both its overloads, which an environment cannot redefine as it does
// boundedCalls'.
func boundedMatches(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.Function() != "matches" || len(call.Args()) != 2 {
		return i, nil
	}
	return &checkedMatch{call}, nil
}

// checkedMatch is a call of matches, checked before it runs.
type checkedMatch struct{ interpreter.InterpretableCall }

// Exec evaluates the operands, checks them (matchesCheck), matches and
// charges the call as cel-go would have (sizeCost's matchesCost).
func (m *checkedMatch) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	args := m.Args()
	s := args[0].Exec(frame)
	if types.IsUnknownOrError(s) {
		return s
	}
	re := args[1].Exec(frame)
	if types.IsUnknownOrError(re) {
		return re
	}
	if refused := matchesCheck(m.Function(), []ref.Val{s, re}); refused != nil {
		return refused // no work done, none charged
	}
	out := types.MaybeNoSuchOverloadErr(s)
	if matcher, ok := s.(traits.Matcher); ok {
		out = matcher.Match(re)
	}
	if t := frame.CostTracker(); t != nil {
		t.EvalBinary(frame, m.ID(), m, s, re, out)
	}
	return out
}

// Eval evaluates the call with the variables of vars.
func (m *checkedMatch) Eval(vars interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(vars, m.Exec)
}

// matchesCheck is the check of s.matches(re): re is at most
// MaxPatternBytes, and the match's cost (matchesCost) at most CostLimit.
// A regular expression's match takes a time in the product of the
// lengths (a 4 KiB expression on a 1 MiB string took minutes), and cel-go
// charges it once it has ended.
func matchesCheck(name string, args []ref.Val) ref.Val {
	s, ok1 := args[0].(types.String)
	re, ok2 := args[1].(types.String)
	switch {
	case !ok1 || !ok2:
		return nil
	case len(re) > MaxPatternBytes:
		return types.NewErr("%s: the regular expression is %d bytes, more than %d", name, len(re), MaxPatternBytes)
	case *matchesCost(len(s), len(re)) > CostLimit:
		return types.NewErr("%s of a %d-byte regular expression on %d bytes would cost %d, more than the cost limit %d",
			name, len(re), len(s), *matchesCost(len(s), len(re)), CostLimit)
	}
	return nil
}

// matchesCost is the cost of matching a string of n bytes against a
// regular expression of m bytes: cel-go's (a unit per ten bytes of the
// string times a quarter of the expression's bytes), and a unit per byte
// of the expression for its compilation (which took 100 to 300 ns a
// byte).
func matchesCost(n, m int) *uint64 {
	c := 1 + uint64(n+1)*uint64(m)/40 + uint64(m)
	return &c
}

// boundedFunctions are env options redefining, in base, the overloads of
// boundedCalls: each checks its call first and fails when it would go
// past its bound, else calls the overload's own binding.
func boundedFunctions(base *cel.Env) []cel.EnvOption {
	var opts []cel.EnvOption
	for name, fn := range base.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			panic("expr: bindings of " + name + ": " + err.Error())
		}
		for _, od := range fn.OverloadDecls() {
			check, ok := boundedCalls[od.ID()]
			if !ok {
				continue
			}
			impl := bindingOf(bindings, od.ID(), name)
			guarded := cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				if err := check(name, args); err != nil {
					return err
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

// bindingOf is the binding of overload id of function name among
// bindings, or the function's own (a singleton binding, as matches has).
func bindingOf(bindings []*functions.Overload, id, name string) *functions.Overload {
	for _, want := range []string{id, name} {
		for _, b := range bindings {
			if b.Operator == want {
				return b
			}
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

// weight is about the bytes v holds: a string's or bytes' length, a
// list's or map's elements' weights and one a member, an optional's
// value's, eight for anything else. It stops counting past limit (it is
// at most limit and some), so that it costs no more than what it weighs.
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
	case *types.Optional:
		if x.HasValue() {
			return weight(x.GetValue(), limit)
		}
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
		if n.n != 0 { // escaped
			return uint64(len(d.str(i)))
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

// smallerWeight is the weight of the lighter of a and b, what comparing
// them may read: weighed with a limit growing fourfold from 1 KiB until
// one of them is within it, so that weighing costs about what the lighter
// weighs, not the heavier (1 == data.l weighs no more than 1 KiB of the
// event's list).
func smallerWeight(a, b ref.Val) uint64 {
	for limit := uint64(1 << 10); ; limit *= 4 {
		wa, wb := weight(a, limit), weight(b, limit)
		if wa <= limit || wb <= limit || limit >= weightLimit {
			return min(wa, wb)
		}
	}
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
		return scanCost(smallerWeight(args[0], args[1]))
	case "_<_", "_<=_", "_>_", "_>=_":
		if textual(args[0]) && textual(args[1]) {
			return scanCost(smallerWeight(args[0], args[1]))
		}
	case "size", "bytes", "string":
		if len(args) == 1 && textual(args[0]) {
			return scanCost(weight(args[0], weightLimit))
		}
	case "@in":
		switch args[1].(type) {
		case traits.Lister:
			return scanCost(weight(args[1], weightLimit))
		case traits.Mapper: // the key is hashed
			return scanCost(weight(args[0], weightLimit))
		}
	case "math.@max", "math.@min": // math.greatest, math.least
		if _, ok := args[0].(traits.Lister); ok && len(args) == 1 {
			return scanCost(weight(args[0], weightLimit))
		}
	case "format", "strings.quote":
		return scanCost(weight(result, weightLimit))
	case "matches":
		s, ok1 := args[0].(types.String)
		re, ok2 := args[1].(types.String)
		if ok1 && ok2 {
			return matchesCost(len(s), len(re))
		}
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
