package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/strictjson"
)

// Media types of the publish formats.
const (
	mediaStructured = "application/cloudevents+json"
	mediaBatch      = "application/cloudevents-batch+json"
	mediaJSON       = "application/json"
)

// Parse reads the events of a publish request from its headers and body.
//
// The format is chosen as the CloudEvents HTTP binding says, content type
// first (its parameters, such as charset, are ignored):
//
//   - application/cloudevents+json: one event in structured mode (a JSON
//     object);
//   - application/cloudevents-batch+json: a JSON array of structured events;
//   - any other request with a ce-specversion header: one event in binary
//     mode (see below);
//   - application/json: one structured event, or an array of them; or
//     Azure Event Grid schema events (see ParseWith: Parse has no default
//     source, so an Event Grid event needs its topic).
//
// Any other content type, or none, gives an error wrapping
// ErrUnsupportedMediaType; a body over MaxBodyBytes gives one wrapping
// ErrBodyTooLarge.
//
// In binary mode the ce-* headers carry the attributes (ce-id, ce-source,
// ce-type, ce-subject, ce-time, ce-dataschema; any other ce-NAME is the
// extension NAME, its value a string). Header values are percent-decoded as
// the HTTP binding requires and must then be valid UTF-8; a repeated ce-*
// header is an error, as are ce-datacontenttype and ce-data. The Content-Type
// header, verbatim, is the datacontenttype. The body is the data: for a JSON
// content type (application/json, text/json, or any */*+json) it must be valid
// JSON and becomes Data; otherwise it becomes DataBase64. An empty body, or
// JSON null, means no data.
//
// Every event must pass Validate; in addition an optional attribute that is
// present must not be an empty string, time must be RFC 3339, and attribute
// values must have the right JSON types (strings for the context attributes;
// string, number or boolean for extensions). A JSON null value means the
// attribute is absent. Members with names that are not valid attribute names,
// and repeated members, are errors. An array must hold 1 to MaxBatchEvents
// objects. One bad event rejects the whole request; the error is a
// *FieldError naming the first bad field found and the event's index.
//
// Names Herald's own operational events use are reserved: an event with
// source ReservedSource ("/herald") or one under "/herald/", or a type
// beginning with ReservedTypePrefix ("herald."), is refused naming source
// or type (ce-source, ce-type in binary mode; topic, eventType for an Event
// Grid event), so a client cannot forge one; ParseOptions.AllowReserved
// lifts this for callers that publish nothing.
func Parse(h http.Header, body []byte) ([]Event, error) {
	return ParseWith(h, body, ParseOptions{})
}

// ParseOptions adjusts ParseWith.
type ParseOptions struct {
	// DefaultSource is the source given to an Event Grid event without a
	// topic (the API passes "/accounts/{account}"). Empty, such an event is
	// an error naming its topic.
	DefaultSource string
	// AllowReserved accepts events with the reserved source or types
	// (see Parse). Only for callers that do not publish what they
	// parse: filter-test, which tells whether a subscription would take
	// an event, operational ones included.
	AllowReserved bool
}

// ParseWith is Parse with options. It reads everything Parse reads and, as
// application/json, Azure Event Grid schema events as well: a JSON array of
// Event Grid events, or one such event alone. A JSON object is an Event Grid
// event when it has an eventType member and no specversion member; one
// request holds events of one schema, and an array that mixes them is an
// error naming the first element of the other schema.
//
// An Event Grid event has the members id, subject, eventType and eventTime
// (all required strings), data (any JSON value; optional), dataVersion,
// topic and metadataVersion (optional strings); any other member is an
// error, as is a metadataVersion other than "1". It becomes the CloudEvent
// with specversion "1.0", id = id, source = topic (opts.DefaultSource when
// absent), type = eventType, subject = subject (none when ""), time =
// eventTime (RFC 3339), data = data as JSON (none when null), and the
// extension dataversion = dataVersion (none when ""). The event must then
// pass Validate, as every event does; errors name the Event Grid members
// ("events[2].eventType", "topic").
func ParseWith(h http.Header, body []byte, opts ParseOptions) ([]Event, error) {
	if len(body) > MaxBodyBytes {
		return nil, &FieldError{
			Field:  "body",
			Detail: fmt.Sprintf("%d bytes exceeds the limit of %d", len(body), MaxBodyBytes),
			Index:  -1,
			err:    ErrBodyTooLarge,
		}
	}
	ct := h.Get("Content-Type")
	mt := mediaType(ct)
	switch {
	case mt == mediaStructured:
		return parseJSON(body, true, false, false, &opts)
	case mt == mediaBatch:
		return parseJSON(body, false, true, false, &opts)
	case strings.HasPrefix(mt, "application/cloudevents"):
		// Structured mode in a format Herald does not read; the binding
		// gives the content type precedence over ce-* headers.
	case hasSpecVersionHeader(h):
		e, fe := parseBinary(h, ct, mt, body, opts.AllowReserved)
		if fe != nil {
			fe.Index = 0
			return nil, fe
		}
		return []Event{e}, nil
	case mt == mediaJSON:
		return parseJSON(body, true, true, true, &opts)
	}
	detail := "content type " + quote(ct) + " is not a publish format; use application/cloudevents+json, " +
		"application/cloudevents-batch+json, application/json, or binary mode (ce-* headers)"
	if ct == "" {
		detail = "missing; use application/cloudevents+json, application/cloudevents-batch+json, " +
			"application/json, or binary mode (ce-* headers)"
	}
	return nil, &FieldError{Field: "content-type", Detail: detail, Index: -1, err: ErrUnsupportedMediaType}
}

// mediaType returns the lowercased media type of a Content-Type value,
// without parameters.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isJSONMediaType reports whether mt (as mediaType returns it) denotes JSON.
func isJSONMediaType(mt string) bool {
	return mt == "application/json" || mt == "text/json" ||
		(strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
}

// bodyError returns a FieldError about the body as a whole.
func bodyError(detail string) *FieldError {
	return &FieldError{Field: "body", Detail: detail, Index: -1}
}

// parseJSON parses a structured-mode body: an object if allowObject, an
// array of objects if allowArray. With eventGrid, Event Grid events are
// accepted too (see ParseWith).
func parseJSON(body []byte, allowObject, allowArray, eventGrid bool, opts *ParseOptions) ([]Event, error) {
	if !utf8.Valid(body) {
		return nil, bodyError("not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, bodyError("empty; expected a JSON event")
	}
	switch trimmed[0] {
	case '{':
		if !allowObject {
			return nil, bodyError("must be a JSON array of events")
		}
		if err := checkJSON(body); err != nil {
			return nil, err
		}
		var e Event
		var fe *FieldError
		if eventGrid && isEventGridObject(body) {
			e, fe = parseEventGrid(body, "", opts)
		} else {
			e, fe = parseObject(body, -1, opts.AllowReserved)
		}
		if fe != nil {
			fe.Index = 0
			return nil, fe
		}
		return []Event{e}, nil
	case '[':
		if !allowArray {
			return nil, bodyError("must be one JSON object; send a batch as application/cloudevents-batch+json")
		}
		if err := checkJSON(body); err != nil {
			return nil, err
		}
		items := arrayElements(trimmed)
		if len(items) == 0 {
			return nil, bodyError("the batch holds no events")
		}
		if len(items) > MaxBatchEvents {
			return nil, bodyError(fmt.Sprintf("the batch holds %d events; the limit is %d", len(items), MaxBatchEvents))
		}
		events := make([]Event, len(items))
		firstEventGrid := false
		for i, raw := range items {
			if raw[0] != '{' {
				return nil, &FieldError{Field: elementPrefix(i), Detail: "must be a JSON object", Index: i}
			}
			var e Event
			var fe *FieldError
			isEG := eventGrid && isEventGridObject(raw)
			if i == 0 {
				firstEventGrid = isEG
			} else if isEG != firstEventGrid {
				return nil, mixedSchemas(elementPrefix(i), i, isEG)
			}
			if isEG {
				e, fe = parseEventGrid(raw, elementPrefix(i)+".", opts)
			} else {
				e, fe = parseObject(raw, i, opts.AllowReserved)
			}
			if fe != nil {
				fe.Index = i
				return nil, fe
			}
			events[i] = e
		}
		return events, nil
	}
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	switch {
	case allowObject && allowArray:
		return nil, bodyError("must be a JSON object or an array of objects")
	case allowArray:
		return nil, bodyError("must be a JSON array of events")
	default:
		return nil, bodyError("must be a JSON object")
	}
}

// checkJSON reports a body that is not one valid JSON value.
func checkJSON(body []byte) *FieldError {
	if validJSON(body) {
		return nil
	}
	return bodyError(syntaxDetail(body))
}

// elementPrefix names the element i of a batch in field names: events[i].
func elementPrefix(i int) string { return "events[" + strconv.Itoa(i) + "]" }

// parseObject decodes one structured-mode event from raw, a valid JSON
// object: element index of a batch (fields named events[index].…), or the
// whole body when index is negative. Unless allowReserved, the reserved
// names are refused (checkReserved).
func parseObject(raw []byte, index int, allowReserved bool) (Event, *FieldError) {
	var e Event
	prefix := ""
	field := func(attr string) string {
		if index >= 0 && prefix == "" {
			prefix = elementPrefix(index) + "."
		}
		return prefix + attr
	}
	bad := func(attr, detail string) (Event, *FieldError) {
		if len(attr) > 64 {
			attr = attr[:64] + "..."
		}
		f := field(attr)
		if attr == "" {
			f = strings.TrimSuffix(f, ".")
			if f == "" {
				f = "body"
			}
		}
		return Event{}, &FieldError{Field: f, Detail: detail}
	}
	// raw is valid JSON (the whole body was checked first): one pass over
	// its members, each value's raw bytes taken as they stand. A refused
	// extension (its name or its value) is reported after the required
	// attributes: the member is more likely a required one misnamed.
	var namesBuf [fewNames][]byte
	names := namesBuf[:0]
	var seen objectNames
	var fe, extension *FieldError
	forEachMember(raw, func(name, _, val []byte) bool {
		var isNew bool
		if names, isNew = seen.add(names, name); !isNew {
			_, fe = bad(string(name), repeatedDetail)
			return false
		}
		if string(val) == "null" {
			return true // JSON null: the attribute is absent
		}
		if d, path := e.setMember(name, val); d != "" {
			_, p := bad(string(name), d)
			if path != "" { // inside data: the name is "data", short
				p.Field += path
			}
			if reserved[string(name)] {
				fe = p
				return false
			}
			extension = cmp.Or(extension, p)
		}
		return true
	})
	if fe != nil {
		return Event{}, fe
	}
	return e.finish(e.structuredRequired(raw, field), extension, field, allowReserved)
}

// notString begins jsonString's detail for a value that is not a JSON
// string, which goes on to name its kind: "must be a string, not a number".
const notString = "must be a string"

// jsonString decodes val if it is a JSON string; otherwise, or when it holds
// a \u escape of a surrogate that is not half of a pair (which CloudEvents
// forbids, and encoding/json would silently turn into U+FFFD), it returns a
// detail saying why not.
func jsonString(val json.RawMessage) (string, string) {
	if len(val) == 0 {
		return "", notString
	}
	if val[0] != '"' {
		return "", notString + ", not " + strictjson.KindOf(val)
	}
	// Fast path: no escapes to undo (val is valid JSON, so the only quote
	// is the closing one, and control characters cannot occur).
	if inner := val[1 : len(val)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), ""
	}
	if r, ok := unpairedSurrogate(val); ok {
		return "", fmt.Sprintf("must not contain an unpaired surrogate (\\u%04X)", r)
	}
	var s string
	if err := json.Unmarshal(val, &s); err != nil {
		return "", notString
	}
	return s, ""
}

// unpairedSurrogate returns the first \u escape in the valid JSON string
// literal lit that names a surrogate code point not paired as UTF-16
// requires.
func unpairedSurrogate(lit []byte) (rune, bool) {
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++ // the escaped character: a \\ is skipped whole
		if lit[i] != 'u' {
			continue
		}
		r := hex4(lit[i+1 : i+5])
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return r, true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 < len(lit) && lit[i+1] == '\\' && lit[i+2] == 'u' {
				if lo := hex4(lit[i+3 : i+7]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return r, true
		}
	}
	return 0, false
}

// hex4 reads four hexadecimal digits (valid JSON guarantees them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
