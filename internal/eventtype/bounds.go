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

// badNumber returns the JSON pointer of v's first number (in document
// order of arrays; any order of an object's members) that numberProblem
// refuses, and the problem; "" and "" when there is none. v is as
// jsonschema.UnmarshalJSON decodes JSON (numbers as json.Number).
func badNumber(v any) (at, problem string) {
	switch v := v.(type) {
	case json.Number:
		return "", numberProblem(v)
	case []any:
		for i, item := range v {
			if p, problem := badNumber(item); problem != "" {
				return "/" + strconv.Itoa(i) + p, problem
			}
		}
	case map[string]any:
		for k, item := range v {
			if p, problem := badNumber(item); problem != "" {
				return pointer([]string{k}) + p, problem
			}
		}
	}
	return "", ""
}

// patternBudget is the regular expression engine of one schema's
// compiler (jsonschema.Compiler.UseRegexpEngine): Go's regexp, refusing
// an expression above MaxPatternSize, and, while the schema compiles, its
// expressions above MaxSchemaPatternSize together. Once compiled (done),
// only MaxPatternSize holds: the engine then compiles the strings checked
// against format "regex", concurrently.
type patternBudget struct {
	used int // while compiling only: one goroutine
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
	if !b.done.Load() {
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
