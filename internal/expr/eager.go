package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
)

// newEagerInput is NewInput for a payload indexJSON does not take: the
// payload decoded whole into Go values (decodeTop), which cel-go reads as
// maps and lists.
func newEagerInput(payload []byte) (*Input, error) {
	top, err := decodeTop(payload)
	if err != nil {
		return nil, fmt.Errorf("expr: the event is not a JSON object: %w", err)
	}
	attrs := make(map[string]any, len(top))
	var data any
	for name, v := range top {
		switch {
		case v == nil:
		case name == "data":
			data = v
		case name == "data_base64":
			s, ok := v.(string)
			if !ok {
				return nil, errBase64NotString
			}
			b, err := decodeBase64(s)
			if err != nil {
				return nil, err
			}
			data = b
		default:
			attrs[name] = v
		}
	}
	return &Input{event: attrs, data: data}, nil
}

// decodeTop decodes payload, one JSON object, with every number a
// float64. It decodes with go-json-experiment/json (the implementation of
// the encoding/json/v2 proposal), and, when that refuses the payload (a
// number beyond float64's range, which it does not round, a duplicate
// member name or invalid UTF-8), with encoding/json, its json.Numbers
// rounded by numbersToFloat (the last of duplicate members wins, invalid
// UTF-8 becomes U+FFFD).
func decodeTop(payload []byte) (map[string]any, error) {
	var top map[string]any
	if jsonv2.Unmarshal(payload, &top) == nil && top != nil {
		return top, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	top = nil
	if err := dec.Decode(&top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("null")
	}
	for name, v := range top {
		top[name] = numbersToFloat(v)
	}
	return top, nil
}

// numbersToFloat replaces, in place, the json.Numbers in v by float64s
// (a magnitude beyond float64's range becomes ±Inf or 0).
func numbersToFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToFloat(e)
		}
	}
	return v
}
