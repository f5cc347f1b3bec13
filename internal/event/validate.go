package event

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks the event against CloudEvents 1.0 and Herald's limits:
//
//   - specversion is "1.0"; id, source and type are non-empty;
//   - every string is valid UTF-8 without the characters CloudEvents
//     forbids: control characters (U+0000 to U+001F and U+007F to U+009F)
//     and Unicode noncharacters;
//   - id, source, type, subject, datacontenttype, dataschema and extension
//     values are no longer than MaxIDLen, MaxSourceLen, MaxTypeLen,
//     MaxSubjectLen, MaxDataContentTypeLen, MaxDataSchemaLen and
//     MaxExtensionValueLen bytes;
//   - source is a URI-reference and dataschema, when set, an absolute URI
//     (both as url.Parse understands them);
//   - datacontenttype, when set, is a media type ("type/subtype" with
//     optional parameters);
//   - time, when set, lies in years 0000 to 9999 (what RFC 3339 can write);
//   - data and data_base64 are not both set; data is valid JSON;
//     data_base64 is padded standard base64 in canonical form;
//   - extension names are 1 to 20 characters of a-z and 0-9, none of them a
//     context attribute or "data"; extension values are strings, booleans,
//     json.Number values or finite Go numbers;
//   - partitionkey (ExtPartitionKey), when set, is a string of 1 to
//     MaxPartitionKeyLen bytes.
//
// The error is a *FieldError naming the attribute, with Index -1.
func (e Event) Validate() error {
	if fe := e.validate(plainName); fe != nil {
		fe.Index = -1
		return fe
	}
	return nil
}

// plainName names an attribute by itself, as Validate reports it.
func plainName(attr string) string { return attr }

// validate checks the event, naming a bad attribute with name(attr). The
// returned error's Index is left for the caller to set. The order of checks
// is fixed, so the same bad event always reports the same field.
func (e *Event) validate(name func(attr string) string) *FieldError {
	bad := func(attr, detail string) *FieldError {
		return &FieldError{Field: name(attr), Detail: detail}
	}
	switch e.SpecVersion {
	case SpecVersion:
	case "":
		return bad(attrSpecVersion, "required")
	default:
		return bad(attrSpecVersion, `must be "1.0", got `+quote(e.SpecVersion))
	}
	required := []struct{ attr, v string }{
		{attrID, e.ID}, {attrSource, e.Source}, {attrType, e.Type},
	}
	for _, r := range required {
		if r.v == "" {
			return bad(r.attr, "required")
		}
	}
	strs := []struct {
		attr, v string
		max     int
	}{
		{attrID, e.ID, MaxIDLen}, {attrSource, e.Source, MaxSourceLen}, {attrType, e.Type, MaxTypeLen},
		{attrSubject, e.Subject, MaxSubjectLen}, {attrDataContentType, e.DataContentType, MaxDataContentTypeLen},
		{attrDataSchema, e.DataSchema, MaxDataSchemaLen},
	}
	for _, s := range strs {
		if d := checkString(s.v, s.max); d != "" {
			return bad(s.attr, d)
		}
	}
	if !plainPath(e.Source) {
		if _, err := url.Parse(e.Source); err != nil {
			return bad(attrSource, "must be a URI-reference such as \"/shop/orders\" or \"urn:example:shop\": "+urlReason(err))
		}
	}
	if e.DataContentType != "" {
		if d := checkMediaType(e.DataContentType); d != "" {
			return bad(attrDataContentType, d)
		}
	}
	if e.DataSchema != "" {
		u, err := url.Parse(e.DataSchema)
		if err != nil {
			return bad(attrDataSchema, "must be an absolute URI such as \"https://example.com/schemas/order.json\": "+urlReason(err))
		}
		if !u.IsAbs() {
			return bad(attrDataSchema, "must be an absolute URI (with a scheme)")
		}
	}
	if !e.Time.IsZero() {
		if y := e.Time.Year(); y < 0 || y > 9999 {
			return bad(attrTime, "year must be between 0000 and 9999")
		}
	}
	if len(e.Extensions) > 0 {
		names := sortedKeys(e.Extensions)
		for _, n := range names {
			if d := checkExtensionName(n); d != "" {
				return bad(n, d)
			}
			if d := checkExtensionValue(e.Extensions[n]); d != "" {
				return bad(n, d)
			}
		}
		if d := checkPartitionKey(e.Extensions); d != "" {
			return bad(ExtPartitionKey, d)
		}
	}
	if len(e.Data) > 0 && e.DataBase64 != "" {
		return bad(memberDataBase64, "data and data_base64 are mutually exclusive")
	}
	if len(e.Data) > 0 && (!validJSON(e.Data) || !utf8.Valid(e.Data)) {
		return bad(memberData, "not valid JSON")
	}
	if e.DataBase64 != "" {
		raw, err := base64.StdEncoding.DecodeString(e.DataBase64)
		if err != nil {
			return bad(memberDataBase64, base64Detail(e.DataBase64, err))
		}
		if base64.StdEncoding.EncodeToString(raw) != e.DataBase64 {
			return bad(memberDataBase64, "not canonical padded standard base64")
		}
	}
	return nil
}

// Names reserved for Herald's operational events (internal/opevents), which
// Herald publishes itself and clients may not (checkReserved).
const (
	// ReservedSource is the source of every operational event. It and
	// every source under it ("/herald/...") are reserved, so that Herald
	// can give later operational events sources of their own.
	ReservedSource = "/herald"
	// ReservedTypePrefix begins the type of every operational event.
	ReservedTypePrefix = "herald."
)

// checkReserved reports an event that uses a name reserved for Herald's
// operational events, naming a bad attribute with name(attr) (the caller
// sets the error's Index): a reserved source or type (ReservedSourceName,
// ReservedTypeName: in any letter case, since filters may compare without
// it, so "/HERALD" and "HERALD.x" are refused like "/herald" and
// "herald.x"). Parse applies it to every event a client publishes, unless
// ParseOptions.AllowReserved. It is the one place the rule is checked:
// Herald's own events (internal/opevents) do not go through Parse, nor
// will those an internal caller publishes deliberately (a herald.test
// event of a subscription's test route): they are handed to the ingest
// path directly.
func (e *Event) checkReserved(name func(attr string) string) *FieldError {
	if ReservedSourceName(e.Source) {
		return &FieldError{Field: name(attrSource), Detail: quote(e.Source) + ` is reserved: "/herald" and the sources under "/herald/" are Herald's own, in any letter case, for its operational events`}
	}
	if ReservedTypeName(e.Type) {
		return &FieldError{Field: name(attrType), Detail: quote(e.Type) + ` is reserved: types beginning with "herald." are Herald's own, in any letter case, for its operational events`}
	}
	return nil
}

// ReservedSourceName reports whether source is reserved for Herald's
// operational events: ReservedSource or a source under it
// (ReservedSource + "/..."), in any letter case (Unicode simple folding,
// as strings.EqualFold and the case-insensitive filters compare).
func ReservedSourceName(source string) bool {
	rest, ok := cutPrefixFold(source, ReservedSource)
	return ok && (rest == "" || rest[0] == '/')
}

// ReservedTypeName reports whether typ is reserved for Herald's
// operational events: it begins with ReservedTypePrefix, in any letter
// case (as ReservedSourceName).
func ReservedTypeName(typ string) bool {
	_, ok := cutPrefixFold(typ, ReservedTypePrefix)
	return ok
}

// cutPrefixFold returns s without prefix and true when s begins with
// prefix in any letter case: its first runes, as many as prefix has, are
// equal to prefix under strings.EqualFold (simple folding maps a rune to
// one rune, so equal strings have as many runes).
func cutPrefixFold(s, prefix string) (string, bool) {
	n := 0
	for range utf8.RuneCountInString(prefix) {
		if n >= len(s) {
			return s, false
		}
		_, size := utf8.DecodeRuneInString(s[n:])
		n += size
	}
	if !strings.EqualFold(s[:n], prefix) {
		return s, false
	}
	return s[n:], true
}

// reserved are the names an extension may not take: the context attributes
// and the JSON members that carry data.
var reserved = map[string]bool{
	attrSpecVersion: true, attrID: true, attrSource: true, attrType: true,
	attrSubject: true, attrDataContentType: true, attrDataSchema: true,
	attrTime: true, memberData: true, memberDataBase64: true,
}

// checkExtensionName returns why name is not a valid extension attribute
// name, or "".
func checkExtensionName(name string) string {
	if name == "" {
		return "attribute name must not be empty"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return "attribute names may hold only lowercase letters a-z and digits 0-9"
		}
	}
	if len(name) > MaxExtensionNameLen {
		return "attribute names may be at most 20 characters long"
	}
	if reserved[name] {
		return "reserved attribute name"
	}
	return ""
}

// checkExtensionValue returns why v is not a valid extension value, or "".
func checkExtensionValue(v any) string {
	const kinds = "extension values must be a string, number or boolean"
	switch v := v.(type) {
	case string:
		return checkString(v, MaxExtensionValueLen)
	case bool:
	case json.Number:
		if len(v) > MaxExtensionValueLen {
			return fmt.Sprintf("a number must be at most %d characters long", MaxExtensionValueLen)
		}
		if !isJSONNumber(string(v)) {
			return "not a valid JSON number"
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
	case float32:
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return "number must be finite"
		}
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "number must be finite"
		}
	default:
		return kinds
	}
	return ""
}

// checkString returns why s is not an attribute value CloudEvents allows, in
// at most max bytes, or "". CloudEvents forbids control characters
// (U+0000 to U+001F, U+007F to U+009F), noncharacters and unpaired
// surrogates (which valid UTF-8 cannot hold).
func checkString(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("must be at most %d bytes, got %d", max, len(s))
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return "not valid UTF-8"
			}
		case unicode.IsControl(r):
			return fmt.Sprintf("must not contain control characters (found %U)", r)
		case isNonCharacter(r):
			return fmt.Sprintf("must not contain Unicode noncharacters (found %U)", r)
		}
	}
	return ""
}

// isNonCharacter reports whether r is one of the 66 code points Unicode
// reserves as noncharacters: U+FDD0 to U+FDEF and the last two of every
// plane.
func isNonCharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

// isJSONNumber reports whether s is exactly one JSON number.
func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	return validJSON([]byte(s))
}

// checkMediaType returns why s is not a media type, or "".
func checkMediaType(s string) string {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || !strings.Contains(mt, "/") {
		return "must be a media type such as application/json"
	}
	return ""
}

// parseTime parses an RFC 3339 timestamp and normalises its location (UTC for
// a zero offset, a nameless fixed zone otherwise) so that formatting and
// parsing again yields an identical time.Time.
func parseTime(s string) (time.Time, string) {
	const detail = "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"
	// time.Parse also accepts a comma before fractional seconds; RFC 3339
	// does not.
	if strings.ContainsRune(s, ',') {
		return time.Time{}, detail
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, detail
	}
	return normalizeTime(t), ""
}

// normalizeTime gives t a location that survives a Format/Parse round trip.
func normalizeTime(t time.Time) time.Time {
	_, off := t.Zone()
	if off == 0 || off%60 != 0 {
		return t.UTC()
	}
	return t.In(time.FixedZone("", off))
}

// quote quotes s for an error detail, shortening it past 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

// plainPath reports whether s holds only letters, digits, "-", ".", "_",
// "~" and "/": a relative reference url.Parse always accepts (no scheme, no
// port, no escapes), checked without its allocations.
func plainPath(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/':
		default:
			return false
		}
	}
	return true
}
