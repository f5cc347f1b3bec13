package filter

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/strictjson"
)

// outcome is how one filter fared against an event.
type outcome uint8

const (
	passed    outcome = iota
	missing           // the key is missing
	null              // the key is null (typed operators, IsNotNull)
	wrongType         // a scalar of another type (typed operators)
	failed            // a scalar of the right type that fails the operator
	failedArr         // an array that fails the operator
)

// eval evaluates c on ev, returning the outcome and the key's value.
func (c *cond) eval(ev *Event) (outcome, any) {
	v, ok := ev.lookup(c)
	op := c.op
	if !ok {
		if op.matchesMissing {
			return passed, nil
		}
		return missing, nil
	}
	switch op.test {
	case testIsNullOrUndefined:
		if v == nil {
			return passed, nil
		}
		return failed, v
	case testIsNotNull:
		if v == nil {
			return null, nil
		}
		return passed, v
	}
	if v == nil {
		return null, nil
	}
	if arr, ok := v.([]any); ok {
		hit := false
		for _, x := range arr {
			if t, h := c.hit(ev, x); t && h {
				hit = true
				break
			}
		}
		if hit != op.negative {
			return passed, v
		}
		return failedArr, v
	}
	typed, hit := c.hit(ev, v)
	switch {
	case !typed:
		return wrongType, v
	case hit != op.negative:
		return passed, v
	}
	return failed, v
}

// hit reports whether v is of c's type and, if so, whether it satisfies
// c's positive test (for a negative operator, its positive counterpart's).
// It first spends the tests it costs on ev (see the package comment,
// "Cost": c.compares, times stringCost for a string; one for a value of
// another type). When ev's pacer stops the matching there, it tests
// nothing and reports a hit of c's type, which ends a loop over an array
// at once; the caller learns of the stop from ev.Err.
func (c *cond) hit(ev *Event, v any) (typed, hit bool) {
	switch c.op.kind {
	case kindNumber:
		f, ok := v.(float64)
		n := 1
		if ok {
			n = c.compares
		}
		if !ev.spend(n) {
			return true, true
		}
		if !ok {
			return false, false
		}
		switch c.op.test {
		case testNumberIn:
			_, found := slices.BinarySearch(c.nums, f)
			return true, found
		case testLess:
			return true, f < c.num
		case testGreater:
			return true, f > c.num
		case testLessOrEqual:
			return true, f <= c.num
		case testGreaterOrEqual:
			return true, f >= c.num
		case testInRange:
			for _, r := range c.ranges {
				if r[0] <= f && f <= r[1] {
					return true, true
				}
			}
			return true, false
		}
	case kindBool:
		if !ev.spend(1) {
			return true, true
		}
		b, ok := v.(bool)
		return ok, ok && b == c.b
	case kindString:
		s, ok := v.(string)
		n := 1
		if ok {
			n = c.compares * stringCost(s)
		}
		if !ev.spend(n) {
			return true, true
		}
		if !ok {
			return false, false
		}
		k := ev.folded(s)
		switch c.op.test {
		case testStringIn:
			_, found := c.set[string(k)]
			return true, found
		case testContains:
			for _, x := range c.folded {
				if bytes.Contains(k, x) {
					return true, true
				}
			}
		case testBeginsWith:
			for _, x := range c.folded {
				if bytes.HasPrefix(k, x) {
					return true, true
				}
			}
		case testEndsWith:
			for _, x := range c.folded {
				if bytes.HasSuffix(k, x) {
					return true, true
				}
			}
		}
		return true, false
	}
	return false, false
}

// stringCost is what comparing a string of the event with one value
// counts, in tests: 1 plus 1 per full 32 bytes of it (folding and
// searching it costs in its length).
func stringCost(s string) int { return 1 + len(s)>>5 }

// explain words an outcome other than passed (see Matcher.Explain).
func (c *cond) explain(ev *Event, o outcome, v any) string {
	key := c.key
	switch o {
	case missing:
		if c.path != nil && ev != nil && ev.noData != "" {
			return key + " is missing" + ev.noData
		}
		return key + " is missing"
	case null:
		return key + " is null"
	case wrongType:
		return key + " is " + show(v) + ", not a " + c.op.kind.String()
	}
	if c.op.test == testIsNullOrUndefined {
		return key + " is " + show(v) + ", not null or undefined"
	}
	pos, neg := c.phrase()
	if o == failedArr {
		if c.op.negative {
			return key + " is " + show(v) + ", with a " + c.op.kind.String() + " element " + neg
		}
		return key + " is " + show(v) + ", with no " + c.op.kind.String() + " element " + pos
	}
	if c.op.negative {
		return key + " is " + show(v) + ", " + neg
	}
	return key + " is " + show(v) + ", not " + pos
}

// phrase words c's positive test, as it reads after "not" and as it reads
// for a negative operator's hit.
func (c *cond) phrase() (pos, neg string) {
	switch c.op.test {
	case testNumberIn, testStringIn:
		return "in " + c.shown, "in " + c.shown
	case testLess:
		return "less than " + c.shown, ""
	case testGreater:
		return "greater than " + c.shown, ""
	case testLessOrEqual:
		return "less than or equal to " + c.shown, ""
	case testGreaterOrEqual:
		return "greater than or equal to " + c.shown, ""
	case testInRange:
		return "in a range of " + c.shown, "in a range of " + c.shown
	case testBoolEquals:
		return "equal to " + c.shown, ""
	case testContains:
		return "containing any of " + c.shown, "containing one of " + c.shown
	case testBeginsWith:
		return "beginning with any of " + c.shown, "beginning with one of " + c.shown
	case testEndsWith:
		return "ending with any of " + c.shown, "ending with one of " + c.shown
	}
	return "", ""
}

// Limits of the values Explain shows.
const (
	maxShownString = 64 // bytes of a string
	maxShownItems  = 8  // items of an array
)

// show writes an event value for Explain: numbers and booleans as JSON,
// strings quoted and shortened, arrays shortened, objects as "an object".
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return quoteShort(v)
	case float64:
		return formatNumber(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		parts := make([]string, 0, min(len(v), maxShownItems+1))
		for i, x := range v {
			if i == maxShownItems {
				parts = append(parts, "... ("+strconv.Itoa(len(v))+" in all)")
				break
			}
			if _, ok := x.([]any); ok {
				parts = append(parts, "[...]")
				continue
			}
			parts = append(parts, show(x))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return "an object"
	}
	return "a value"
}

// quoteShort quotes s, cut to maxShownString bytes on a character boundary.
func quoteShort(s string) string {
	if len(s) <= maxShownString {
		return strconv.Quote(s)
	}
	return strconv.Quote(strictjson.Cut(s, maxShownString)) + "..."
}

// formatNumber writes f the shortest way that reads back the same, in
// exponent form only when very large or small (as encoding/json does).
func formatNumber(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
