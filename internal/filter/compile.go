package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/strictjson"
)

// kind is the type of value an operator reads.
type kind uint8

const (
	kindNone   kind = iota // IsNullOrUndefined, IsNotNull
	kindNumber             // the Number operators
	kindBool               // BoolEquals
	kindString             // the String operators
)

func (k kind) String() string {
	switch k {
	case kindNumber:
		return "number"
	case kindBool:
		return "boolean"
	case kindString:
		return "string"
	}
	return "value"
}

// test is an operator's positive predicate; a negative operator uses its
// positive counterpart's and inverts the outcome.
type test uint8

const (
	testIsNullOrUndefined test = iota
	testIsNotNull
	testNumberIn
	testLess
	testGreater
	testLessOrEqual
	testGreaterOrEqual
	testInRange
	testBoolEquals
	testContains
	testBeginsWith
	testEndsWith
	testStringIn
)

// operand is what an operator takes.
type operand uint8

const (
	operandNone   operand = iota
	operandValue          // "value": one number or boolean
	operandValues         // "values": a list of numbers or strings
	operandRanges         // "values": a list of [low, high] pairs
)

// operator describes one operator type.
type operator struct {
	name    string
	kind    kind
	operand operand
	test    test
	// negative: the operator matches when its test does not hit.
	negative bool
	// matchesMissing: the operator matches a missing key (the NotIn
	// operators and IsNullOrUndefined).
	matchesMissing bool
}

// operators in the order Event Grid's documentation lists them.
var operators = []operator{
	{name: "NumberIn", kind: kindNumber, operand: operandValues, test: testNumberIn},
	{name: "NumberNotIn", kind: kindNumber, operand: operandValues, test: testNumberIn, negative: true, matchesMissing: true},
	{name: "NumberLessThan", kind: kindNumber, operand: operandValue, test: testLess},
	{name: "NumberGreaterThan", kind: kindNumber, operand: operandValue, test: testGreater},
	{name: "NumberLessThanOrEquals", kind: kindNumber, operand: operandValue, test: testLessOrEqual},
	{name: "NumberGreaterThanOrEquals", kind: kindNumber, operand: operandValue, test: testGreaterOrEqual},
	{name: "NumberInRange", kind: kindNumber, operand: operandRanges, test: testInRange},
	{name: "NumberNotInRange", kind: kindNumber, operand: operandRanges, test: testInRange, negative: true, matchesMissing: true},
	{name: "BoolEquals", kind: kindBool, operand: operandValue, test: testBoolEquals},
	{name: "StringContains", kind: kindString, operand: operandValues, test: testContains},
	{name: "StringNotContains", kind: kindString, operand: operandValues, test: testContains, negative: true},
	{name: "StringBeginsWith", kind: kindString, operand: operandValues, test: testBeginsWith},
	{name: "StringNotBeginsWith", kind: kindString, operand: operandValues, test: testBeginsWith, negative: true},
	{name: "StringEndsWith", kind: kindString, operand: operandValues, test: testEndsWith},
	{name: "StringNotEndsWith", kind: kindString, operand: operandValues, test: testEndsWith, negative: true},
	{name: "StringIn", kind: kindString, operand: operandValues, test: testStringIn},
	{name: "StringNotIn", kind: kindString, operand: operandValues, test: testStringIn, negative: true, matchesMissing: true},
	{name: "IsNullOrUndefined", kind: kindNone, operand: operandNone, test: testIsNullOrUndefined, matchesMissing: true},
	{name: "IsNotNull", kind: kindNone, operand: operandNone, test: testIsNotNull},
}

func operatorNames() string {
	names := make([]string, len(operators))
	for i, op := range operators {
		names[i] = op.name
	}
	return strings.Join(names, ", ")
}

func lookupOperator(name string) (*operator, *operator) {
	var near *operator
	for i := range operators {
		if operators[i].name == name {
			return &operators[i], nil
		}
		if strings.EqualFold(operators[i].name, name) {
			near = &operators[i]
		}
	}
	return nil, near
}

// attributes are the CloudEvents context attributes a key may name besides
// extensions.
var attributes = []string{"id", "source", "type", "subject", "time", "datacontenttype", "dataschema", "specversion"}

// maxExtensionNameLen is CloudEvents' (and Herald's) longest extension
// name.
const maxExtensionNameLen = 20

// cond is one compiled filter.
type cond struct {
	op  *operator
	key string // as written, for Explain
	// attr is the attribute name (lowercase) when path is nil.
	attr string
	// path is the data path after "data." split at the dots; nil for an
	// attribute.
	path []string

	num    float64      // the single-value Number operators
	b      bool         // BoolEquals
	nums   []float64    // NumberIn, NumberNotIn: sorted
	ranges [][2]float64 // NumberInRange, NumberNotInRange
	folded [][]byte     // the String operators but StringIn/NotIn: folded values
	set    map[string]struct{}
	// compares is how many of its values a test of one event value of
	// its type compares it with, one at a time: the StringContains,
	// BeginsWith and EndsWith values and the ranges; 1 for the others,
	// which compare with one value or look the value up in a set.
	compares int

	// shown is the operand as written, for Explain: 100, true,
	// ["a", "b"], [[1, 5], [10, 20]].
	shown string
}

// compile decodes and checks raw (not empty, not null).
func compile(raw []byte) (*Matcher, error) {
	var list []Filter
	if err := strictjson.Decode(raw, "advanced_filters", &list); err != nil {
		field := err.Field
		if field == "body" {
			field = "advanced_filters"
		}
		// A syntax error names the "body"; here the body is the list.
		detail := strings.Replace(err.Detail, "the body ends there", "the list ends there", 1)
		return nil, &FieldError{Field: field, Detail: detail}
	}
	if len(list) == 0 {
		return nil, nil
	}
	if len(list) > MaxFilters {
		return nil, &FieldError{Field: "advanced_filters", Detail: fmt.Sprintf("at most %d filters, got %d", MaxFilters, len(list))}
	}
	m := &Matcher{conds: make([]cond, len(list))}
	total := 0
	for i := range list {
		n, err := compileOne(&m.conds[i], &list[i], fmt.Sprintf("advanced_filters[%d]", i), total)
		if err != nil {
			return nil, err
		}
		total += n
		c := &m.conds[i]
		c.compares = max(len(c.folded), len(c.ranges), 1)
	}
	return m, nil
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// compileOne checks f (at field p) into c, given the number of values the
// filters before it hold, and returns the number f holds.
func compileOne(c *cond, f *Filter, p string, before int) (int, *FieldError) {
	bad := func(field, format string, args ...any) (int, *FieldError) {
		return 0, &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if f.OperatorType == "" {
		return bad(p+".operator_type", "required: one of %s", operatorNames())
	}
	op, near := lookupOperator(f.OperatorType)
	if op == nil {
		if near != nil {
			return bad(p+".operator_type", "unknown operator %s; operator names are case-sensitive: did you mean %s?", quote(f.OperatorType), near.name)
		}
		return bad(p+".operator_type", "unknown operator %s; the operators are %s", quote(f.OperatorType), operatorNames())
	}
	c.op = op
	if err := c.compileKey(f.Key, p+".key"); err != nil {
		return 0, err
	}

	hasValue, hasValues := !isNull(f.Value), !isNull(f.Values)
	switch op.operand {
	case operandNone:
		if hasValue {
			return bad(p+".value", "%s takes no value", op.name)
		}
		if hasValues {
			return bad(p+".values", "%s takes no values", op.name)
		}
		return 0, nil
	case operandValue:
		if hasValues {
			return bad(p+".values", "%s takes one %s in value, not an array in values", op.name, op.kind)
		}
		if !hasValue {
			return bad(p+".value", "required: %s compares the key with one %s", op.name, op.kind)
		}
		if before+1 > MaxValues {
			return bad(p+".value", "at most %d values across all filters; this one makes %d", MaxValues, before+1)
		}
		return 1, c.compileValue(f.Value, p+".value")
	default:
		if hasValue {
			return bad(p+".value", "%s takes an array in values, not value", op.name)
		}
		if !hasValues {
			if op.operand == operandRanges {
				return bad(p+".values", "required: an array of [low, high] pairs of numbers")
			}
			return bad(p+".values", "required: an array of %ss", op.kind)
		}
		var items []json.RawMessage
		if json.Unmarshal(f.Values, &items) != nil {
			if op.operand == operandRanges {
				return bad(p+".values", "must be an array of [low, high] pairs of numbers, not %s", strictjson.KindOf(f.Values))
			}
			return bad(p+".values", "must be an array of %ss, not %s", op.kind, strictjson.KindOf(f.Values))
		}
		switch n := len(items); {
		case n == 0:
			return bad(p+".values", "must hold at least one value")
		case n > MaxValues:
			return bad(p+".values", "at most %d values, got %d", MaxValues, n)
		case before+n > MaxValues:
			return bad(p+".values", "at most %d values across all filters; these %d make %d", MaxValues, n, before+n)
		}
		return len(items), c.compileValues(items, p+".values")
	}
}

// compileKey checks key and sets c.key, c.attr and c.path.
func (c *cond) compileKey(key, field string) *FieldError {
	c.key = key
	if key == "" {
		return &FieldError{Field: field, Detail: "required: a CloudEvents attribute name (" + strings.Join(attributes, ", ") +
			", or an extension's) or data.<path>"}
	}
	if len(key) > 5 && strings.EqualFold(key[:5], "data.") {
		c.path = strings.Split(key[5:], ".")
		if slices.Contains(c.path, "") {
			return &FieldError{Field: field, Detail: quote(key) + " has an empty member name in its path; write data.<name>[.<name>...]"}
		}
		return nil
	}
	name := strings.ToLower(key)
	if name == "data" || name == "data." || name == "data_base64" {
		return &FieldError{Field: field, Detail: quote(key) + " is not a key: filters read the data through a path, data.<name>[.<name>...]"}
	}
	if slices.Contains(attributes, name) {
		c.attr = name
		return nil
	}
	ok := len(name) <= maxExtensionNameLen
	for i := 0; ok && i < len(name); i++ {
		ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')
	}
	if !ok {
		return &FieldError{Field: field, Detail: quote(key) + " is neither a CloudEvents attribute name (" + strings.Join(attributes, ", ") +
			", or an extension's: letters and digits, at most 20) nor data.<path>"}
	}
	c.attr = name
	return nil
}

// compileValue reads the operand of a single-value operator.
func (c *cond) compileValue(raw json.RawMessage, field string) *FieldError {
	switch c.op.kind {
	case kindBool:
		switch string(raw) {
		case "true", "false":
			c.b = string(raw) == "true"
			c.shown = string(raw)
			return nil
		}
		return &FieldError{Field: field, Detail: "must be true or false, not " + strictjson.KindOf(raw)}
	default: // kindNumber
		f, err := number(raw, field)
		if err != nil {
			return err
		}
		c.num = f
		c.shown = formatNumber(f)
		return nil
	}
}

// compileValues reads the items of a list operator's values.
func (c *cond) compileValues(items []json.RawMessage, field string) *FieldError {
	shown := make([]string, len(items))
	for i, raw := range items {
		at := field + "[" + strconv.Itoa(i) + "]"
		switch {
		case c.op.operand == operandRanges:
			var pair []json.RawMessage
			if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 {
				what := strictjson.KindOf(raw)
				if pair != nil {
					what = fmt.Sprintf("an array of %d", len(pair))
				}
				return &FieldError{Field: at, Detail: "must be a [low, high] pair of numbers, not " + what}
			}
			var r [2]float64
			for j := range pair {
				f, err := number(pair[j], at+"["+strconv.Itoa(j)+"]")
				if err != nil {
					return err
				}
				r[j] = f
			}
			if r[0] > r[1] {
				return &FieldError{Field: at, Detail: fmt.Sprintf("low %s is greater than high %s", formatNumber(r[0]), formatNumber(r[1]))}
			}
			c.ranges = append(c.ranges, r)
			shown[i] = "[" + formatNumber(r[0]) + ", " + formatNumber(r[1]) + "]"
		case c.op.kind == kindNumber:
			f, err := number(raw, at)
			if err != nil {
				return err
			}
			c.nums = append(c.nums, f)
			shown[i] = formatNumber(f)
		default: // kindString
			var s string
			if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
				return &FieldError{Field: at, Detail: "must be a string, not " + strictjson.KindOf(raw)}
			}
			if n := utf8.RuneCountInString(s); n > MaxStringLen {
				return &FieldError{Field: at, Detail: fmt.Sprintf("at most %d characters, got %d", MaxStringLen, n)}
			}
			folded := appendFold(nil, s)
			if c.op.test == testStringIn {
				if c.set == nil {
					c.set = make(map[string]struct{}, len(items))
				}
				c.set[string(folded)] = struct{}{}
			} else {
				c.folded = append(c.folded, folded)
			}
			shown[i] = quoteShort(s)
		}
	}
	slices.Sort(c.nums)
	c.nums = slices.Compact(c.nums)
	c.shown = "[" + strings.Join(shown, ", ") + "]"
	return nil
}

// number reads raw as a JSON number.
func number(raw json.RawMessage, field string) (float64, *FieldError) {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, &FieldError{Field: field, Detail: "must be a number, not " + strictjson.KindOf(raw)}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, &FieldError{Field: field, Detail: strictjson.Shorten(string(raw)) + " is out of range"}
		}
		return 0, &FieldError{Field: field, Detail: "must be a number, not " + strictjson.Shorten(string(raw))}
	}
	return f, nil
}

// quote quotes s for a message, shortened.
func quote(s string) string { return strconv.Quote(strictjson.Shorten(s)) }
