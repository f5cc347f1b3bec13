// Package filter implements a subscription's advanced filters
// (docs/subscriptions.md, "Filters"):
// Azure Event Grid's advanced filters, written in snake case, compiled once
// per subscription and matched against events as Herald stores them
// (CloudEvents 1.0 structured-mode JSON).
//
// # Filters
//
// A subscription's advanced_filters is a JSON list of filters:
//
//	[{"operator_type": "NumberGreaterThan", "key": "data.amount", "value": 100},
//	 {"operator_type": "StringIn", "key": "subject", "values": ["a", "b"]}]
//
// The filters are ANDed: an event matches when every filter matches. The
// values of one filter are ORed: StringIn matches a key equal to any of its
// values. The negative operators (the Not ones) match when no value hits:
// StringNotIn ["a", "b"] matches a key that is neither "a" nor "b".
//
// Operators, and what they take:
//
//	NumberGreaterThan, NumberGreaterThanOrEquals,
//	NumberLessThan, NumberLessThanOrEquals    value: a number
//	NumberIn, NumberNotIn                     values: numbers
//	NumberInRange, NumberNotInRange           values: [low, high] pairs, low ≤ high, bounds included
//	BoolEquals                                value: true or false
//	StringContains, StringNotContains,
//	StringBeginsWith, StringNotBeginsWith,
//	StringEndsWith, StringNotEndsWith,
//	StringIn, StringNotIn                     values: strings
//	IsNullOrUndefined, IsNotNull              neither value nor values
//
// A JSON null value or values counts as absent. Numbers are compared as
// float64. String comparisons ignore letter case (Unicode simple case
// folding, rune by rune: "STRASSE" does not match "straße").
//
// # Keys
//
// A key names a CloudEvents attribute (id, source, type, subject, time,
// datacontenttype, dataschema, specversion, or an extension name: lowercase
// letters and digits, at most 20) or a path into JSON data: data.amount,
// data.customer.region (each dot goes one object deeper; there is no escape
// for a member name holding a dot, and no array indexing). Attribute names
// and the "data." prefix are read in any letter case, as Event Grid does
// ("Subject", "Data.amount"); the path after "data." is case-sensitive, as
// JSON member names are. The attribute time is a string (RFC 3339, as
// stored); extensions are strings, numbers or booleans as published.
//
// # Matching
//
// A typed operator (every operator but IsNullOrUndefined and IsNotNull)
// matches only a value of its type: the Number operators numbers, BoolEquals
// booleans, the String operators strings. A value of another type, such as
// the string "100" for NumberGreaterThan, an object, or null, matches no
// typed operator, negative ones included: StringNotIn ["a"] does not match
// the number 5.
//
// A missing key (an absent attribute, a data path that does not exist, or
// goes through something that is not an object, or any data.* key of an
// event whose data is absent or not JSON) matches only the NotIn operators
// (NumberNotIn, StringNotIn, NumberNotInRange) and IsNullOrUndefined
// (Event Grid's documented rule; Event Grid's note predates
// NumberNotInRange, which Herald counts as a NotIn operator). Every other
// operator, StringNotContains, StringNotBeginsWith and StringNotEndsWith
// included, does not match a missing key.
//
// Null: in data, a JSON null value is null, not missing: IsNullOrUndefined
// matches it, IsNotNull does not, and no typed operator matches it. An
// attribute whose value is null is absent (the CloudEvents JSON format's
// rule).
//
// Data is read as JSON when the event carries a "data" member and its
// datacontenttype is absent or a JSON type (application/json, text/json,
// */*+json). Events with data_base64, or with a JSON string under a
// non-JSON datacontenttype, match only on attributes: every data.* key is
// missing.
//
// Arrays (Event Grid's rule for enableAdvancedFilteringOnArrays, which
// Herald always applies): when the key's value is an array, its elements
// of the operator's type are tested and the others (strings for a Number
// operator, objects, nested arrays, nulls) are ignored. A positive operator
// matches when any such element matches. A negative operator matches when
// no such element hits any of its values (Event Grid's pseudo code: an
// element that hits fails the match): StringNotIn ["b"] does not match
// ["a", "b"] and matches ["a", "c"]. So a negative operator matches an
// empty array, or one with no element of its type, while a positive one
// does not. IsNullOrUndefined does not match an array (empty or not);
// IsNotNull does.
//
// # Limits
//
// At most MaxFilters filters, and at most MaxValues values across all the
// filters of a subscription (Event Grid's limit: a value counts one, a list
// of values one per item, a [low, high] pair one, IsNullOrUndefined and
// IsNotNull none). A string value is at most MaxStringLen characters.
//
// # Cost
//
// Compile does the work once: string values are case-folded, In lists
// become sets or sorted slices, data paths are split. An Event parses its
// payload lazily and at most once, however many matchers read it: the
// attributes on the first filter that reads any key, the data on the first
// data.* key. Match then allocates nothing.
//
// The work of matching is counted in filter tests (Event.Tested): a
// filter's test of one value of the event (the key's value, or one element
// of an array) counts one test per value of the filter it is compared with
// (each of StringContains', StringBeginsWith's and StringEndsWith's values
// and their Not forms', each range of NumberInRange and NumberNotInRange;
// one for the other operators, which compare with one value or look the
// value up in a set), a string event value 1 plus 1 per full 32 bytes of
// it for each (folding and searching it costs in its length), and a value
// not of the operator's type one. IsNullOrUndefined and IsNotNull count
// nothing. An Index's lookup of a value counts as a StringIn test does,
// and catalog.Snapshot.Match charges one per candidate subscription
// (Event.Charge). Parsing is not counted: it is done once and bounded by
// the payload's size. A Pacer (pace.go) bounds the tests of one publish
// request, stops them when its context ends, and runs heavy matching in
// the turns of a Gate.
package filter

import (
	"bytes"
	"encoding/json"
)

// Filter is one advanced filter as a subscription writes it: Event Grid's
// advanced filter with its member names in snake case.
type Filter struct {
	OperatorType string `json:"operator_type"`
	Key          string `json:"key"`
	// Value is the operand of the single-value operators (the Number
	// comparisons and BoolEquals).
	Value json.RawMessage `json:"value,omitempty"`
	// Values is the list of the list operators; for NumberInRange and
	// NumberNotInRange a list of [low, high] pairs.
	Values json.RawMessage `json:"values,omitempty"`
}

// Limits of a subscription's advanced filters (Event Grid's).
const (
	// MaxFilters is the most filters a subscription may have.
	MaxFilters = 25
	// MaxValues is the most values all the filters of a subscription may
	// hold together.
	MaxValues = 25
	// MaxStringLen is the longest string value, in characters (runes).
	MaxStringLen = 512
)

// FieldError reports the first invalid part of an advanced_filters list.
// Field names it: "advanced_filters" for the list as a whole (not a list,
// too many filters), "advanced_filters[3].key", "advanced_filters[0].values",
// "advanced_filters[0].values[2]", "advanced_filters[1].values[0][1]" (a
// bound of a range). Detail says what is wrong, in a sentence fragment that
// reads after the field.
type FieldError struct {
	Field, Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// Matcher is a compiled list of advanced filters. A nil *Matcher stands for
// no filters and matches every event. A Matcher is immutable and safe for
// concurrent use (the Events it reads are not).
type Matcher struct {
	conds []cond
}

// Compile checks a subscription's advanced filters, the JSON list as
// stored, and compiles them. nil, empty (white space only) or null raw, or
// an empty list, means no filters: Compile returns a nil Matcher. Every
// error is a *FieldError naming the first problem; the checks are those
// described in the package comment, plus strict JSON (internal/strictjson:
// no unknown or repeated member names, so Event Grid's camelCase
// "operatorType" is an error that lists the snake-case fields).
func Compile(raw json.RawMessage) (*Matcher, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return compile(raw)
}

// Len returns the number of filters (0 for a nil Matcher).
func (m *Matcher) Len() int {
	if m == nil {
		return 0
	}
	return len(m.conds)
}

// Match reports whether ev passes every filter. A nil Matcher matches every
// event; a nil ev is an event in which every key is missing.
func (m *Matcher) Match(ev *Event) bool {
	if m == nil {
		return true
	}
	for i := range m.conds {
		if o, _ := m.conds[i].eval(ev); o != passed {
			return false
		}
	}
	return true
}

// Explain is Match with a reason: it returns -1 and "" when ev matches,
// else the index of the first filter that fails and why, in plain words
// naming the key and its value: `data.amount is 40, not greater than 100`,
// `data.region is missing`, `subject is "a/b", not beginning with any of
// ["x/"]`. Values in the reason are shortened.
func (m *Matcher) Explain(ev *Event) (failed int, why string) {
	if m == nil {
		return -1, ""
	}
	for i := range m.conds {
		c := &m.conds[i]
		if o, v := c.eval(ev); o != passed {
			return i, c.explain(ev, o, v)
		}
	}
	return -1, ""
}
