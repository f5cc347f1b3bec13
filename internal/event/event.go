// Package event is Herald's CloudEvents 1.0 model: the Event type, the parsing
// of every publish format Herald accepts (structured mode, batch mode, binary
// mode and plain application/json), validation, and Marshal, which writes the
// canonical structured-mode JSON that Herald stores and delivers.
//
// Parse and Marshal are inverses on everything Parse accepts: for any event e
// that Parse returns, parsing e.Marshal() as application/cloudevents+json
// yields an Event deeply equal to e. To make that hold, Parse normalises a few
// things: JSON data is compacted, data_base64 is re-encoded in canonical
// padded standard base64, times carry either UTC or a nameless fixed zone, and
// JSON null attribute values are treated as absent (as the CloudEvents JSON
// format requires).
package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"
)

// MaxBodyBytes is the largest publish request body Parse accepts, 1 MiB.
// Callers should also bound the read itself (http.MaxBytesReader).
const MaxBodyBytes = 1 << 20

// MaxBatchEvents is the most events one publish request may carry.
const MaxBatchEvents = 1000

// MaxExtensionNameLen is the longest extension attribute name accepted.
const MaxExtensionNameLen = 20

// Limits on attribute values, in bytes of UTF-8. An event id and source
// together stay well inside what a database index entry may hold.
const (
	MaxIDLen              = 512
	MaxSourceLen          = 1024
	MaxTypeLen            = 256
	MaxSubjectLen         = 2048
	MaxDataContentTypeLen = 256
	MaxDataSchemaLen      = 2048
	// MaxExtensionValueLen bounds an extension's string value, or the text
	// of its number.
	MaxExtensionValueLen = 1024
)

// SpecVersion is the only CloudEvents specversion Herald accepts and writes.
const SpecVersion = "1.0"

// Event is one CloudEvent.
//
// Optional string attributes are absent when empty. Data and DataBase64 are
// mutually exclusive; both empty means the event carries no data.
type Event struct {
	SpecVersion, ID, Source, Type, Subject, DataContentType, DataSchema string
	// Time is the zero time when the attribute is absent.
	Time time.Time
	// Data holds the event data as compact JSON text when the data is JSON:
	// the "data" member of a structured event (whatever its content type; a
	// non-JSON content type then usually has a JSON string here), or the body
	// of a binary-mode request with a JSON content type.
	Data json.RawMessage
	// DataBase64 holds binary data in padded standard base64 (the CloudEvents
	// "data_base64" member): the body of a binary-mode request whose content
	// type is not JSON.
	DataBase64 string
	// Extensions holds the other top-level attributes, keyed by name (lowercase
	// a-z and 0-9, at most 20 characters). Values parsed from JSON are string,
	// bool or json.Number (the number's text as sent); values from binary-mode
	// headers are strings. Nil when the event has none.
	Extensions map[string]any

	// checked is set by Parse on the events it returns: they passed
	// Validate and their Data is compact, so Marshal need not check or
	// compact them again (about a third of a publish's parsing cost). An
	// Event built or changed by other code has it false; changing a parsed
	// event's fields and then marshaling it needs Validate first (Marshal
	// trusts the mark).
	checked bool
}

// Names of the context attributes defined by CloudEvents 1.0, and the two
// members that carry data in the JSON format.
const (
	attrSpecVersion     = "specversion"
	attrID              = "id"
	attrSource          = "source"
	attrType            = "type"
	attrSubject         = "subject"
	attrDataContentType = "datacontenttype"
	attrDataSchema      = "dataschema"
	attrTime            = "time"
	memberData          = "data"
	memberDataBase64    = "data_base64"
)

// ErrUnsupportedMediaType is wrapped by the error Parse returns when the
// request's content type is not a publish format (the API answers 415).
var ErrUnsupportedMediaType = errors.New("unsupported media type")

// ErrBodyTooLarge is wrapped by the error Parse returns when the body exceeds
// MaxBodyBytes (the API answers 413).
var ErrBodyTooLarge = errors.New("body too large")

// FieldError reports the first invalid part of a publish request.
//
// Field names it: "source" for a single structured event, "events[3].source"
// for the fourth event of an array, "ce-id" for a binary-mode header,
// "content-type", or "body" for the request as a whole. Index is the event's
// position (0 for a single event) or -1 when the error is not about one event.
//
// Every error Parse returns is a *FieldError. Use errors.Is with
// ErrUnsupportedMediaType and ErrBodyTooLarge to pick the 415 and 413 cases
// out of the ordinary 400 ones.
type FieldError struct {
	Field, Detail string
	Index         int

	err error // sentinel for errors.Is, or nil
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// Unwrap returns ErrUnsupportedMediaType or ErrBodyTooLarge when the error is
// one of those cases, nil otherwise.
func (e *FieldError) Unwrap() error { return e.err }

// Marshal returns the event as CloudEvents 1.0 structured-mode JSON: one
// object holding specversion, id, source, type, the optional attributes that
// are set, the extensions in name order, then data or data_base64. An empty
// SpecVersion is written as "1.0". The output is compact and does not escape
// HTML characters.
//
// Marshal fails when the event does not pass Validate, so its output is
// always accepted by Parse.
func (e Event) Marshal() ([]byte, error) {
	if e.SpecVersion == "" {
		e.SpecVersion = SpecVersion
	}
	if !e.checked {
		if err := e.Validate(); err != nil {
			return nil, err
		}
	}
	size := 128 + len(e.ID) + len(e.Source) + len(e.Type) + len(e.Subject) +
		len(e.DataContentType) + len(e.DataSchema) + len(e.Data) + len(e.DataBase64)
	b := make([]byte, 0, size)
	b = append(b, '{')
	b = appendMember(b, attrSpecVersion, e.SpecVersion, true)
	b = appendMember(b, attrID, e.ID, false)
	b = appendMember(b, attrSource, e.Source, false)
	b = appendMember(b, attrType, e.Type, false)
	if e.Subject != "" {
		b = appendMember(b, attrSubject, e.Subject, false)
	}
	if e.DataContentType != "" {
		b = appendMember(b, attrDataContentType, e.DataContentType, false)
	}
	if e.DataSchema != "" {
		b = appendMember(b, attrDataSchema, e.DataSchema, false)
	}
	if !e.Time.IsZero() {
		b = appendMember(b, attrTime, normalizeTime(e.Time).Format(time.RFC3339Nano), false)
	}
	for _, name := range sortedKeys(e.Extensions) {
		b = append(b, ',')
		b = appendString(b, name)
		b = append(b, ':')
		switch v := e.Extensions[name].(type) {
		case string:
			b = appendString(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		case json.Number:
			b = append(b, v...)
		default:
			// Validate admits only the numeric kinds left.
			n, _ := json.Marshal(v)
			b = append(b, n...)
		}
	}
	switch {
	case len(e.Data) > 0:
		b = append(b, `,"data":`...)
		if e.checked {
			b = append(b, e.Data...)
			break
		}
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, e.Data); err != nil {
			return nil, &FieldError{Field: memberData, Detail: "not valid JSON", Index: -1}
		}
		b = buf.Bytes()
	case e.DataBase64 != "":
		b = appendMember(b, memberDataBase64, e.DataBase64, false)
	}
	return append(b, '}'), nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendMember appends "name":"value", preceded by a comma unless first.
func appendMember(b []byte, name, value string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = appendString(b, name)
	b = append(b, ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string. It escapes only what JSON requires
// (quote, backslash, control characters); s is expected to be valid UTF-8,
// which Validate checks.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
