package eventtype

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of what a schema and a check may cost. The validator turns every
// number it compares (type integer, minimum, multipleOf, enum, const,
// uniqueItems) into an exact big.Rat, whose cost grows with the number's
// exponent (1e1000000 takes about 60 ms and 400 KB) and, faster than
// linearly, with its digits; and Go's regular expressions match in time
// proportional to the string's length times the expression's size
// (instructions). So numbers and expressions are bounded, in the schemas
// (a 400 naming schemas.N when written) and in the data checked at
// publish (a violation naming the member).
const (
	// MaxNumberLen bounds a JSON number's text, in bytes.
	MaxNumberLen = 100
	// MaxNumberExponent bounds the exponent written in a number (the
	// digits after e or E), either sign: float64's range (±308, and
	// -324 for the smallest) fits.
	MaxNumberExponent = 400
	// MaxPatternSize bounds one regular expression (a pattern, a
	// patternProperties name, a string checked against format "regex"),
	// in instructions of its compiled program (repeats expanded:
	// [a-z]{1,64} is about 130).
	MaxPatternSize = 2000
	// MaxSchemaPatternSize bounds the instructions of all of a schema's
	// regular expressions together.
	MaxSchemaPatternSize = 20000
	// MaxFanOut bounds the subschemas a schema may apply to one value of
	// the data, at any depth, counting every path to them through $ref,
	// allOf, anyOf, oneOf, not, if/then/else and dependentSchemas (and
	// the keywords that descend: properties, items, …): a schema that
	// branches as it recurses ({"items": {"anyOf": [A, A]}} inside A)
	// applies 2^depth subschemas to the deepest value. The count is an
	// upper bound (each of allOf's branches counts its properties), so a
	// schema that refers to a draft's metaschema, which branches so, is
	// refused too.
	MaxFanOut = 256
	// MaxDataDepth bounds how deep the data checked at publish nests (the
	// data itself is depth 0): a value deeper is a violation, so that
	// MaxFanOut, counted to this depth, holds.
	MaxDataDepth = 64
)

// numberProblem returns why n is beyond MaxNumberLen or MaxNumberExponent,
// "" when it is not.
func numberProblem(n json.Number) string {
	s := string(n)
	if len(s) > MaxNumberLen {
		return fmt.Sprintf("a number of %d characters (%s); Herald checks numbers of at most %d", len(s), cut(s, 32), MaxNumberLen)
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return ""
	}
	if e, err := strconv.Atoi(s[i+1:]); err != nil || e > MaxNumberExponent || e < -MaxNumberExponent {
		return fmt.Sprintf("the number %s has an exponent beyond ±%d, the most Herald checks", s, MaxNumberExponent)
	}
	return ""
}

// badData returns the JSON pointer of v's first value (in document order
// of arrays; any order of an object's members) that is a number
// numberProblem refuses or lies deeper than MaxDataDepth (depth is v's),
// and the problem; "" and "" when there is none. v is as
// jsonschema.UnmarshalJSON decodes JSON (numbers as json.Number). With w
// set, the same walk counts in w.spent the schema work of each value it
// passes (Schema.Work): the check's cost is known before it validates.
func badData(v any, depth int, w *workCount) (at, problem string) {
	if depth > MaxDataDepth {
		return "", fmt.Sprintf("the value lies more than %d levels deep, the most Herald checks", MaxDataDepth)
	}
	if w != nil {
		w.add(depth)
	}
	switch v := v.(type) {
	case json.Number:
		return "", numberProblem(v)
	case []any:
		for i, item := range v {
			if p, problem := badData(item, depth+1, w); problem != "" {
				return "/" + strconv.Itoa(i) + p, problem
			}
		}
	case map[string]any:
		for k, item := range v {
			if p, problem := badData(item, depth+1, w); problem != "" {
				return pointer([]string{k}) + p, problem
			}
		}
	}
	return "", ""
}

// workCount is badData's count of a check's schema work: each value counts
// widths[its depth], the most subschemas the schema may apply to a value
// that deep (at least 1; 1 past the deepest the schema reaches).
type workCount struct {
	widths []int
	spent  int
}

func (w *workCount) add(depth int) {
	if depth < len(w.widths) {
		w.spent += w.widths[depth]
	} else {
		w.spent++
	}
}

// patternBudget is the regular expression engine of one schema's
// compiler (jsonschema.Compiler.UseRegexpEngine): Go's regexp, refusing
// an expression above MaxPatternSize, and, while the schema compiles, its
// expressions above MaxSchemaPatternSize together. Once compiled (done),
// only MaxPatternSize holds: the engine then compiles the strings checked
// against format "regex", concurrently.
type patternBudget struct {
	used int             // while compiling only: one goroutine
	seen map[string]bool // counted in used (the compiler checks each against the metaschema, then compiles it)
	done atomic.Bool
}

// compile is the jsonschema.RegexpEngine.
func (b *patternBudget) compile(s string) (jsonschema.Regexp, error) {
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, err
	}
	n := progSize(re)
	if n > MaxPatternSize {
		return nil, fmt.Errorf("the regular expression %q is too large: about %d instructions, at most %d", cut(s, 64), n, MaxPatternSize)
	}
	if !b.done.Load() && !b.seen[s] {
		if b.seen == nil {
			b.seen = map[string]bool{}
		}
		b.seen[s] = true
		if b.used += n; b.used > MaxSchemaPatternSize {
			return nil, fmt.Errorf("the schema's regular expressions are too large together: more than %d instructions", MaxSchemaPatternSize)
		}
	}
	return regexp.Compile(s)
}

// progSize estimates the instructions of re's compiled program, repeats
// expanded, without compiling it (saturating above MaxSchemaPatternSize).
func progSize(re *syntax.Regexp) int {
	const ceiling = MaxSchemaPatternSize + 1
	if re.Op == syntax.OpRepeat {
		m := re.Max
		if m < 0 {
			m = re.Min + 1
		}
		return min(ceiling, max(m, 1)*(progSize(re.Sub[0])+1))
	}
	n := 1 // a class is one instruction; a literal, one a rune
	if re.Op == syntax.OpLiteral {
		n = max(1, len(re.Rune))
	}
	for _, sub := range re.Sub {
		n = min(ceiling, n+progSize(sub)+1)
	}
	return n
}

// refLoop returns the location of a schema reachable from s that applies
// itself to the same instance again through in-place keywords ($ref,
// $dynamicRef, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas)
// without descending into the data: the validator would find the loop at
// publish and fail the events that reach it; it is refused when the
// schema is written. "" when there is none. A $dynamicRef is followed to
// its static target.
func refLoop(s *jsonschema.Schema) string {
	const (
		unseen = iota
		open
		closed
	)
	state := map[*jsonschema.Schema]int{}
	var visit func(*jsonschema.Schema) string
	visit = func(s *jsonschema.Schema) string {
		if s == nil || state[s] == closed {
			return ""
		}
		if state[s] == open {
			return s.Location
		}
		state[s] = open
		for _, next := range inPlace(s) {
			if at := visit(next); at != "" {
				return at
			}
		}
		state[s] = closed
		return ""
	}
	at := ""
	eachSchema(s, func(s *jsonschema.Schema) bool {
		at = visit(s)
		return at != ""
	})
	return at
}

// descending returns the subschemas s applies to the members or items of
// the instance (or to its property names, or its decoded content).
func descending(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	out = append(out, s.PrefixItems...)
	for _, a := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch a := a.(type) {
		case *jsonschema.Schema:
			out = append(out, a)
		case []*jsonschema.Schema:
			out = append(out, a...)
		}
	}
	return out
}

// inPlace returns the subschemas s applies to the instance it is applied
// to (not to its members or items).
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(append(append(out, s.AllOf...), s.AnyOf...), s.OneOf...)
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	for _, d := range s.Dependencies {
		if d, ok := d.(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// fanOut counts the subschemas a schema applies to one value of the data
// (MaxFanOut), memoised by schema, depth and the type of the value the
// schema is applied to; counts saturate above MaxFanOut. A schema whose
// "type" excludes the value's applies nothing more to it (the validator
// stops there), so that anyOf branches of distinct types (the draft
// metaschemas' items: a schema or an array of them) count one. The schema
// must have no loop (refLoop).
type fanOut map[fanKey]int

type fanKey struct {
	s *jsonschema.Schema
	d int
	t valueType
}

// valueType is what fanOut knows of a value's type: a container, or not.
type valueType int

const (
	tObject valueType = iota
	tArray
	tOther
)

// types returns the value types a value d levels below another may have
// (it has members or items when it is above the one counted).
func types(d int) []valueType {
	if d > 0 {
		return []valueType{tObject, tArray}
	}
	return []valueType{tObject, tArray, tOther}
}

// widest returns, for each depth from 0 to MaxDataDepth that root
// reaches, the most subschemas root applies to one value that deep (at
// least 1: the validator visits the value); it stops past a depth whose
// count is above MaxFanOut (Compile then refuses root).
func widest(root *jsonschema.Schema) []int {
	f := fanOut{}
	var widths []int
	for d := 0; d <= MaxDataDepth; d++ {
		n := 0
		for _, t := range types(d) {
			n = max(n, f.at(root, d, t))
		}
		if n == 0 { // no schema this deep: none deeper
			break
		}
		widths = append(widths, n)
		if n > MaxFanOut {
			break
		}
	}
	return widths
}

// allows reports whether s's "type" lets a value of type t through.
func allows(s *jsonschema.Schema, t valueType) bool {
	if s.Types == nil || s.Types.IsEmpty() {
		return true
	}
	for _, name := range s.Types.ToStrings() {
		switch {
		case name == "object" && t == tObject, name == "array" && t == tArray,
			name != "object" && name != "array" && t == tOther:
			return true
		}
	}
	return false
}

// at returns how many subschemas s, applied to a value of type t, applies
// to one value d levels below it (to the value itself when d is 0, s
// included): those its in-place keywords apply there, and those its
// descending keywords apply one level down.
func (f fanOut) at(s *jsonschema.Schema, d int, t valueType) int {
	if s == nil || d < 0 {
		return 0
	}
	k := fanKey{s, d, t}
	if n, ok := f[k]; ok {
		return n
	}
	n := 0
	if d == 0 {
		n = 1
	}
	if allows(s, t) {
		for _, c := range inPlace(s) {
			n = min(n+f.at(c, d, t), MaxFanOut+1)
		}
		if d > 0 {
			n = min(n+f.below(s, d-1, t), MaxFanOut+1)
		}
	}
	f[k] = n
	return n
}

// below returns how many subschemas s's descending keywords apply to one
// value d levels below a member (t is tObject) or an item (tArray) of the
// value s is applied to, the most for any type of the member: one of
// properties (the most), every patternProperties, the additional and
// unevaluated ones, propertyNames for a member; one of prefixItems and
// items (the most), contains and unevaluatedItems for an item.
func (f fanOut) below(s *jsonschema.Schema, d int, t valueType) int {
	most := 0
	for _, ct := range types(d) {
		one := func(ss ...*jsonschema.Schema) int {
			m := 0
			for _, c := range ss {
				m = max(m, f.at(c, d, ct))
			}
			return m
		}
		if t == tObject {
			most = max(most, f.member(s, d, ct, one))
		} else {
			most = max(most, f.item(s, d, ct, one))
		}
	}
	return most
}

// member is below's count for a member of type ct.
func (f fanOut) member(s *jsonschema.Schema, d int, ct valueType, one func(...*jsonschema.Schema) int) int {
	props := make([]*jsonschema.Schema, 0, len(s.Properties))
	for _, p := range s.Properties {
		props = append(props, p)
	}
	n := one(props...) + f.at(s.UnevaluatedProperties, d, ct) + f.at(s.PropertyNames, d, ct)
	for _, p := range s.PatternProperties {
		n += f.at(p, d, ct)
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		n += f.at(a, d, ct)
	}
	return n
}

// item is below's count for an item of type ct.
func (f fanOut) item(s *jsonschema.Schema, d int, ct valueType, one func(...*jsonschema.Schema) int) int {
	n := one(append([]*jsonschema.Schema{s.Items2020}, s.PrefixItems...)...)
	switch it := s.Items.(type) { // draft-07 and older
	case *jsonschema.Schema:
		n = max(n, f.at(it, d, ct))
	case []*jsonschema.Schema:
		n = max(n, one(it...))
	}
	if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		n = max(n, f.at(a, d, ct))
	}
	return n + f.at(s.Contains, d, ct) + f.at(s.UnevaluatedItems, d, ct)
}
