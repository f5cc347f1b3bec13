package filter

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// This file is a reference implementation of the matching rules, written
// from the package comment as plainly as possible and sharing no matching
// code with the package: it interprets []Filter on every call, decodes
// the event anew, and compares strings with strings.EqualFold. The tests
// check that the compiled Matcher agrees with it.

// refMatch returns the index of the first filter ev fails, or -1. The
// filters must be valid.
func refMatch(filters []Filter, payload []byte) int {
	ev := refDecode(payload)
	for i, f := range filters {
		if !refOne(f, ev) {
			return i
		}
	}
	return -1
}

type refEvent struct {
	attrs  map[string]any
	data   any
	dataOK bool
}

func refDecode(payload []byte) refEvent {
	var top map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&top) != nil || d.More() {
		return refEvent{}
	}
	ev := refEvent{attrs: map[string]any{}}
	for k, v := range top {
		if k != "data" && k != "data_base64" && v != nil {
			ev.attrs[k] = v
		}
	}
	data, hasData := top["data"]
	_, b64 := top["data_base64"]
	if b64 && top["data_base64"] == nil {
		b64 = false
	}
	jsonType := true
	if ct, ok := ev.attrs["datacontenttype"]; ok {
		s, _ := ct.(string)
		mt := strings.ToLower(strings.TrimSpace(strings.Split(s, ";")[0]))
		jsonType = mt == "application/json" || mt == "text/json" || (strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
	}
	ev.data, ev.dataOK = data, hasData && data != nil && !b64 && jsonType
	return ev
}

func refLookup(key string, ev refEvent) (any, bool) {
	if len(key) > 5 && strings.EqualFold(key[:5], "data.") {
		if !ev.dataOK {
			return nil, false
		}
		v := ev.data
		for _, name := range strings.Split(key[5:], ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[name]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	v, ok := ev.attrs[strings.ToLower(key)]
	return v, ok
}

func refNumber(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, false
	}
	return f, true
}

// refEqualRunes reports whether a and b are equal ignoring case, rune by rune.
func refEqualRunes(a, b []rune) bool {
	return len(a) == len(b) && strings.EqualFold(string(a), string(b))
}

func refRunes(s string) []rune {
	rs := make([]rune, 0, len(s))
	for _, r := range s {
		rs = append(rs, r) // invalid bytes become U+FFFD
	}
	return rs
}

// refOne reports whether ev passes the filter f.
func refOne(f Filter, ev refEvent) bool {
	v, ok := refLookup(f.Key, ev)
	name := f.OperatorType
	negative := strings.Contains(name, "Not") && name != "IsNotNull"
	if !ok {
		return name == "NumberNotIn" || name == "StringNotIn" || name == "NumberNotInRange" || name == "IsNullOrUndefined"
	}
	switch name {
	case "IsNullOrUndefined":
		return v == nil
	case "IsNotNull":
		return v != nil
	}
	if v == nil {
		return false
	}
	var values []json.RawMessage
	json.Unmarshal(f.Values, &values)
	if arr, ok := v.([]any); ok {
		for _, x := range arr {
			if typed, hit := refTest(name, f.Value, values, x); typed && hit {
				return !negative
			}
		}
		return negative
	}
	typed, hit := refTest(name, f.Value, values, v)
	return typed && hit != negative
}

// refTest reports whether x is of the type operator name tests (typed) and
// whether its positive test holds against the filter's value (single) or
// values (hit).
func refTest(name string, single json.RawMessage, values []json.RawMessage, x any) (typed, hit bool) {
	switch {
	case strings.HasPrefix(name, "Number"):
		return refTestNumber(name, single, values, x)
	case name == "BoolEquals":
		b, ok := x.(bool)
		return ok, ok && string(single) == strconv.FormatBool(b)
	default:
		return refTestString(name, values, x)
	}
}

// refTestNumber is refTest for the Number operators.
func refTestNumber(name string, single json.RawMessage, values []json.RawMessage, x any) (typed, hit bool) {
	n, ok := refNumber(x)
	if !ok {
		return false, false
	}
	switch name {
	case "NumberIn", "NumberNotIn":
		for _, raw := range values {
			w, _ := strconv.ParseFloat(string(raw), 64)
			if n == w {
				return true, true
			}
		}
		return true, false
	case "NumberInRange", "NumberNotInRange":
		for _, raw := range values {
			var pair []float64
			json.Unmarshal(raw, &pair)
			if n >= pair[0] && n <= pair[1] {
				return true, true
			}
		}
		return true, false
	}
	w, _ := strconv.ParseFloat(string(single), 64)
	switch name {
	case "NumberLessThan":
		return true, n < w
	case "NumberGreaterThan":
		return true, n > w
	case "NumberLessThanOrEquals":
		return true, n <= w
	case "NumberGreaterThanOrEquals":
		return true, n >= w
	}
	panic("unknown operator " + name)
}

// refTestString is refTest for the String operators: x must be a string,
// compared rune by rune ignoring case with each of values.
func refTestString(name string, values []json.RawMessage, x any) (typed, hit bool) {
	s, ok := x.(string)
	if !ok {
		return false, false
	}
	sr := refRunes(s)
	for _, raw := range values {
		var w string
		json.Unmarshal(raw, &w)
		wr := refRunes(w)
		if len(wr) > len(sr) {
			continue
		}
		switch strings.TrimPrefix(strings.TrimPrefix(name, "String"), "Not") {
		case "In":
			if refEqualRunes(sr, wr) {
				return true, true
			}
		case "BeginsWith":
			if refEqualRunes(sr[:len(wr)], wr) {
				return true, true
			}
		case "EndsWith":
			if refEqualRunes(sr[len(sr)-len(wr):], wr) {
				return true, true
			}
		case "Contains":
			for i := 0; i+len(wr) <= len(sr); i++ {
				if refEqualRunes(sr[i:i+len(wr)], wr) {
					return true, true
				}
			}
		}
	}
	return true, false
}
