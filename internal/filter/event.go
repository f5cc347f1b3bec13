package filter

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/expr"
)

// Event is one event as filters read it, built from its stored
// structured-mode JSON. It parses the payload lazily and at most once,
// however many matchers read it: the top level and the attributes when a
// filter first reads a key, the data when a filter first reads a data.*
// key. An Event is not safe for concurrent use (reading it writes its
// caches). A nil *Event is an event in which every key is missing.
//
// Values are read as encoding/json reads them into an interface (string,
// bool, nil, []any, map[string]any), except numbers, which are float64 with
// any magnitude beyond float64's range rounded to ±Inf or 0 rather than
// refused. A payload that is not a JSON object is an event in which every
// key is missing; data that is not valid JSON is missing data.
type Event struct {
	payload []byte

	parsed bool
	attrs  map[string]any // non-null attributes, by name
	// data is the raw JSON of "data" when the event carries JSON data,
	// else nil; noData says why not ("" when it does).
	data   json.RawMessage
	noData string

	dataParsed bool
	root       any
	rootOK     bool

	// exprIn is the event as CEL reads it, built once (exprBuilt) by
	// ExprInput; exprErr says why it could not be.
	exprBuilt bool
	exprIn    *expr.Input
	exprErr   error

	// fold is scratch space for case-folding the strings filters read.
	fold []byte

	parses, dataParses int // for tests: how often each was parsed
	// tests counts the filter tests spent on the event (see Tested); at
	// next, spend looks at pacer (nil: none), which has counted them up
	// to checked (see pace.go).
	tests, next, checked int
	pacer                *Pacer
}

// Reasons a data.* key is missing, as Explain words them.
const (
	noDataAbsent  = " (the event has no data)"
	noDataNotJSON = " (the event's data is not JSON)"
)

// NewEvent returns the event whose stored payload (a CloudEvent in
// structured-mode JSON, as event.Event.Marshal writes it) is payload.
// Nothing is parsed yet; payload must not change while the Event is used.
func NewEvent(payload []byte) *Event {
	return &Event{payload: payload}
}

// parse reads the top level: the attributes, and whether there is JSON
// data.
func (e *Event) parse() {
	e.parsed = true
	e.parses++
	e.noData = noDataAbsent
	var top map[string]json.RawMessage
	if json.Unmarshal(e.payload, &top) != nil {
		return
	}
	e.attrs = make(map[string]any, len(top))
	base64 := false
	for name, raw := range top {
		switch name {
		case "data":
			if string(raw) != "null" {
				e.data = raw
			}
			continue
		case "data_base64":
			base64 = string(raw) != "null"
			continue
		}
		if v, ok := decodeValue(raw); ok && v != nil {
			e.attrs[name] = v
		}
	}
	switch {
	case base64:
		e.data, e.noData = nil, noDataNotJSON
	case e.data == nil:
	case !isJSONContentType(e.attrs["datacontenttype"]):
		e.data, e.noData = nil, noDataNotJSON
	default:
		e.noData = ""
	}
}

// isJSONContentType reports whether the datacontenttype attribute ct (nil
// when absent) denotes JSON data: absent (structured mode's default),
// application/json, text/json or any */*+json, parameters ignored.
func isJSONContentType(ct any) bool {
	if ct == nil {
		return true
	}
	s, ok := ct.(string)
	if !ok {
		return false
	}
	mt, _, _ := strings.Cut(s, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || mt == "text/json" ||
		(strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
}

// decodeValue decodes one JSON value (see Event for the types).
func decodeValue(raw []byte) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return s, true
	case 't', 'f', 'n':
		switch string(raw) {
		case "true":
			return true, true
		case "false":
			return false, true
		case "null":
			return nil, true
		}
		return nil, false
	case '{', '[':
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return nil, false
		}
		return numbersToFloat(v), true
	}
	f, ok := parseNumber(string(raw))
	return f, ok
}

// parseNumber reads a JSON number; out of float64's range it is ±Inf (or
// 0), not an error.
func parseNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// numbersToFloat replaces the json.Numbers in v by float64s.
func numbersToFloat(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := parseNumber(string(v))
		return f
	case map[string]any:
		for k, x := range v {
			switch x.(type) {
			case json.Number, map[string]any, []any:
				v[k] = numbersToFloat(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = numbersToFloat(x)
		}
	}
	return v
}

// lookup returns the value of c's key and whether the key is present. A
// present key may hold nil (JSON null, in data only).
func (e *Event) lookup(c *cond) (any, bool) {
	if e == nil {
		return nil, false
	}
	if !e.parsed {
		e.parse()
	}
	if c.path == nil {
		v, ok := e.attrs[c.attr]
		return v, ok
	}
	if !e.dataParsed {
		e.dataParsed = true
		if e.data != nil {
			e.dataParses++
			e.root, e.rootOK = decodeValue(e.data)
			if !e.rootOK {
				e.noData = noDataNotJSON
			}
		}
	}
	if !e.rootOK {
		return nil, false
	}
	v := e.root
	for _, name := range c.path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// Tested returns the filter tests spent on the event so far by the
// filters and indexes that read it, and charged to it (Charge): the unit
// of the work matching it cost (see the package comment, "Cost"). It grows
// linearly with the event's size for a given set of subscriptions:
// Index.Candidates looks each element of an indexed key's array up once,
// and a filter tests each element of its key's array at most once.
func (e *Event) Tested() int {
	if e == nil {
		return 0
	}
	return e.tests
}

// folded returns s case-folded, in scratch space valid until the next call.
func (e *Event) folded(s string) []byte {
	e.fold = appendFold(e.fold[:0], s)
	return e.fold
}

// ExprInput returns the event as CEL expressions read it (internal/expr's
// Input), built the first time it is asked for and shared by every
// subscription's filter_expression after: an event is parsed for them at
// most once. err says the payload cannot be read as one (not a JSON
// object, or a data_base64 that is not base64), which no expression then
// matches.
func (e *Event) ExprInput() (*expr.Input, error) {
	if !e.exprBuilt {
		e.exprBuilt = true
		e.exprIn, e.exprErr = expr.NewInput(e.payload)
	}
	return e.exprIn, e.exprErr
}

// Context is the context of e's pacer (context.Background when it has
// none): a filter expression's evaluation ends with it.
func (e *Event) Context() context.Context {
	if e == nil || e.pacer == nil {
		return context.Background()
	}
	return e.pacer.ctx
}
