package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/retry"
)

// Limits on subscription fields and management request bodies.
const (
	maxNameLen                 = 200
	maxURLLen                  = 2048
	maxEventTypes              = 100
	maxEventTypeLen            = event.MaxTypeLen // every type a subscription lists can be published
	maxSubjectFilter           = 1024
	maxHeaders                 = 10   // Event Grid's limit on custom delivery headers
	maxHeaderName              = 256  // bytes
	maxHeaderValue             = 4096 // Event Grid's limit on a header value, in bytes
	minTimeout                 = 100 * time.Millisecond
	maxTimeout                 = 5 * time.Minute
	defaultSubscriptionTimeout = 30 * time.Second // Event Grid's response timeout
	maxJSONBody                = 1 << 20
	maxJSONDepth               = 32 // nesting of objects and arrays in a management body
	maxFieldName               = 64 // bytes of a member name quoted in a problem's field
)

// inputError is a problem with one field of a request: it answers 400
// naming the field.
type inputError struct {
	Field, Detail string
}

func (e *inputError) Error() string { return e.Field + ": " + e.Detail }

func badInput(field, format string, args ...any) *inputError {
	return &inputError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// reservedHeaders are the header names a subscription's custom headers may
// not use, lowercased, with the reason: the ones Herald sets on every
// attempt, and the ones that belong to the connection or that the HTTP
// client manages (a custom value would be dropped, break the request, or
// lie about the body).
var reservedHeaders = map[string]string{
	"content-type": "is set by Herald", "user-agent": "is set by Herald",

	"connection": "is a hop-by-hop header", "keep-alive": "is a hop-by-hop header",
	"proxy-connection": "is a hop-by-hop header", "proxy-authenticate": "is a hop-by-hop header",
	"proxy-authorization": "is a hop-by-hop header", "te": "is a hop-by-hop header",
	"trailer": "is a hop-by-hop header", "transfer-encoding": "is a hop-by-hop header",
	"upgrade": "is a hop-by-hop header", "http2-settings": "is a hop-by-hop header",

	"host": "is set by the HTTP client from the url", "content-length": "is set by the HTTP client from the body",
	"expect":           "is managed by the HTTP client",
	"content-encoding": "would misdescribe the body, which Herald sends unencoded",
}

// reservedHeaderPrefixes start header names Herald sets or will set.
var reservedHeaderPrefixes = []string{"webhook-", "herald-", "ce-"}

// checkText checks a text field: at most max bytes, no control characters
// (tab included), and, when required, not blank.
func checkText(field, s string, max int, required bool) *inputError {
	switch {
	case required && strings.TrimSpace(s) == "":
		return badInput(field, "must not be empty")
	case len(s) > max:
		return badInput(field, "must be at most %d bytes, got %d", max, len(s))
	}
	if r, ok := findControl(s, false); ok {
		return badInput(field, "must not contain control characters (found %U)", r)
	}
	if !utf8.ValidString(s) {
		return badInput(field, "must be valid UTF-8")
	}
	return nil
}

// findControl returns the first control character in s (U+0000 to U+001F,
// U+007F to U+009F), skipping tabs when allowTab.
func findControl(s string, allowTab bool) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) && !(allowTab && r == '\t') {
			return r, true
		}
	}
	return 0, false
}

// checkURL checks a delivery URL: an absolute http or https URL with a
// host an attempt can connect to, a port in range and no fragment.
func checkURL(s string) *inputError {
	const field = "url"
	if len(s) > maxURLLen {
		return badInput(field, "must be at most %d bytes, got %d", maxURLLen, len(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return badInput(field, "is not a URL: %v", err)
	}
	switch {
	case !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "":
		return badInput(field, "must be an absolute http or https URL, such as https://example.com/hook")
	case strings.Contains(s, "#"):
		return badInput(field, "must not have a fragment (#...)")
	case u.Hostname() == "":
		return badInput(field, "must name a host, such as https://example.com/hook")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return badInput(field, "the port must be a number from 1 to 65535, got %q", port)
		}
	}
	if msg := checkHost(u.Hostname()); msg != "" {
		return badInput(field, "%s", msg)
	}
	return nil
}

// checkHost returns why host (a URL's hostname, without brackets or port)
// cannot be connected to, or "".
func checkHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		switch {
		case ip.IsUnspecified():
			return "the host " + strconv.Quote(host) + " is the unspecified address, which no connection can be made to"
		case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "the host " + strconv.Quote(host) + " is a broadcast or multicast address, which no connection can be made to"
		}
		return ""
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) > 253 {
		return "the host name must be at most 253 bytes"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "the host name " + strconv.Quote(host) + " is not valid: each dot-separated part must be 1 to 63 bytes"
		}
		for _, r := range l {
			if !(r == '-' || r == '_' || r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
				r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))) {
				return fmt.Sprintf("the host name %q is not valid: it may hold letters, digits, '-' and '_', not %q", host, r)
			}
		}
	}
	// A name whose last part is a number is an IPv4 address in a short or
	// non-decimal form ("0", "127.1", "0x7f.1"), which resolvers read in
	// different ways; no top-level domain is numeric.
	last := strings.ToLower(labels[len(labels)-1])
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return "the host " + strconv.Quote(host) + " is not a valid IPv4 address: write one as four decimal numbers such as 192.0.2.1"
	}
	return ""
}

func checkEventTypes(ts []string) *inputError {
	if len(ts) > maxEventTypes {
		return badInput("event_types", "must list at most %d event types, got %d", maxEventTypes, len(ts))
	}
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		f := fmt.Sprintf("event_types[%d]", i)
		if err := checkText(f, t, maxEventTypeLen, true); err != nil {
			return err
		}
		if seen[t] {
			return badInput(f, "repeats the event type %q", t)
		}
		seen[t] = true
	}
	return nil
}

func checkTimeout(s string) (time.Duration, *inputError) {
	const field = "timeout"
	d, msg := retry.ParseDuration(s)
	if msg != "" {
		return 0, badInput(field, "%s", msg)
	}
	if d < minTimeout || d > maxTimeout {
		return 0, badInput(field, "must be from %s to %s, got %s", minTimeout, maxTimeout, d)
	}
	return d, nil
}

// checkHeaders checks a subscription's custom headers: at most maxHeaders;
// names HTTP tokens of at most maxHeaderName bytes, none reserved and no two
// the same in any letter case; values HTTP field values (visible
// characters, spaces and tabs, not at either end) of at most
// maxHeaderValue bytes. Problems name the field "<field>.<Name>" (field:
// headers or secret_headers); names are
// visited in order, so the same input always reports the same field.
func checkHeaders(field string, h map[string]string) *inputError {
	if len(h) > maxHeaders {
		return badInput(field, "must hold at most %d headers, got %d", maxHeaders, len(h))
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	seen := make(map[string]string, len(h))
	for _, k := range names {
		f := joinPath(field, k)
		lk := strings.ToLower(k)
		v := h[k]
		switch {
		case k == "":
			return badInput(f, "a header name must not be empty")
		case len(k) > maxHeaderName:
			return badInput(f, "a header name must be at most %d bytes, got %d", maxHeaderName, len(k))
		case !validHeaderName(k):
			return badInput(f, "a header name may hold only letters, digits and !#$%%&'*+-.^_`|~")
		case seen[lk] != "":
			return badInput(f, "repeats the header %s: header names are case-insensitive", seen[lk])
		case reservedHeaders[lk] != "":
			return badInput(f, "cannot be set: %s %s", k, reservedHeaders[lk])
		case hasAnyPrefix(lk, reservedHeaderPrefixes):
			return badInput(f, "cannot be set: names starting with %s are set by Herald", lk[:strings.IndexByte(lk, '-')+1])
		case len(v) > maxHeaderValue:
			return badInput(f, "a header value must be at most %d bytes, got %d", maxHeaderValue, len(v))
		case strings.Trim(v, " \t") != v:
			return badInput(f, "a header value must not begin or end with a space or tab")
		}
		if r, ok := findControl(v, true); ok {
			return badInput(f, "a header value must not contain control characters other than tab (found %U)", r)
		}
		seen[lk] = k
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// shorten cuts s to at most maxFieldName bytes on a character boundary,
// marking the cut with "...", and makes it valid UTF-8.
func shorten(s string) string {
	if len(s) <= maxFieldName {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := maxFieldName
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "..."
}

// joinPath names the member name of the object at path, shortening a
// long name and writing an empty one as "".
func joinPath(path, name string) string {
	if name == "" {
		name = `""`
	}
	if path == "" {
		return shorten(name)
	}
	return path + "." + shorten(name)
}

// decodeBody reads a management request's body, at most 1 MiB, and decodes
// it into v, a pointer to a struct, as decodeJSON does. On a problem it
// answers and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge, Detail: "the body must be at most 1 MiB"})
			return false
		}
		invalid(w, "body", "could not read the body")
		return false
	}
	if err := decodeJSON(body, "", v); err != nil {
		invalid(w, err.Field, err.Detail)
		return false
	}
	return true
}

// decodeJSON decodes data, one JSON value, into v (a pointer) the way
// encoding/json would, but strictly: data must be exactly one value with
// nothing after it; no object may repeat a member name; member names match
// struct fields' json names exactly (letter case included) and a name that
// matches none is an error; strings must be valid UTF-8 without unpaired
// surrogate escapes or control characters other than tab; nesting is at
// most maxJSONDepth deep; null is accepted only where encoding/json would
// store it (pointers, slices, maps, json.RawMessage), and numbers must fit
// their Go type. path names the value in problems ("" for the request body,
// whose problems name their field from its top, or "body").
//
// Anything decodeJSON accepts, encoding/json decodes to the same value.
func decodeJSON(data []byte, path string, v any) *inputError {
	j, err := parseJSON(data, path)
	if err != nil {
		return err
	}
	return bindJSON(j, reflect.ValueOf(v).Elem(), path)
}

// jsonKind is the kind of a JSON value.
type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// String names the kind for a problem's detail: "must be an object, not a
// string".
func (k jsonKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// jsonValue is one parsed JSON value.
type jsonValue struct {
	kind    jsonKind
	text    string // a string's value; a number's or a literal's text
	raw     []byte // the value as sent
	members []jsonMember
	items   []*jsonValue
}

type jsonMember struct {
	name  string
	value *jsonValue
}

// jsonParser reads one JSON value. A syntax error stops it; any other
// problem (a repeated member, a bad string) is kept, the first one only, and
// parsing goes on, so that malformed JSON is reported as such wherever it
// is.
type jsonParser struct {
	data    []byte
	pos     int
	syntax  *inputError
	content *inputError
}

// parseJSON parses data, which must hold exactly one JSON value. path names
// the value in problems about its content.
func parseJSON(data []byte, path string) (*jsonValue, *inputError) {
	p := &jsonParser{data: data}
	p.space()
	if p.pos == len(data) {
		return nil, badInput(orBody(path), "is empty; it must be a JSON object")
	}
	v := p.value(path, 0)
	if p.syntax == nil {
		if p.space(); p.pos < len(data) {
			p.syntax = badInput("body", "must hold one JSON value and nothing after it, but more follows at byte %d: %s", p.pos+1, p.describe())
		}
	}
	if p.syntax != nil {
		return nil, p.syntax
	}
	if p.content != nil {
		return nil, p.content
	}
	return v, nil
}

func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

func (p *jsonParser) fail(what string) {
	if p.syntax == nil {
		p.syntax = badInput("body", "is not valid JSON: %s at byte %d (%s)", what, p.pos+1, p.describe())
	}
}

func (p *jsonParser) flag(field, format string, args ...any) {
	if p.content == nil {
		p.content = badInput(orBody(field), format, args...)
	}
}

// describe names what is at the parser's position.
func (p *jsonParser) describe() string {
	if p.pos >= len(p.data) {
		return "the body ends there"
	}
	c := p.data[p.pos]
	if c > ' ' && c < 0x7f {
		return fmt.Sprintf("found %q", c)
	}
	return fmt.Sprintf("found byte 0x%02x", c)
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *jsonParser) value(path string, depth int) *jsonValue {
	start := p.pos
	var v *jsonValue
	switch c := p.peek(); {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			p.fail(fmt.Sprintf("objects and arrays nest more than %d deep", maxJSONDepth))
			return nil
		}
		if c == '{' {
			v = p.object(path, depth)
		} else {
			v = p.array(path, depth)
		}
	case c == '"':
		v = &jsonValue{kind: jsonString, text: p.str(path, false)}
	case c == '-' || (c >= '0' && c <= '9'):
		v = p.number()
	default:
		for _, lit := range []struct {
			text string
			kind jsonKind
		}{{"true", jsonBool}, {"false", jsonBool}, {"null", jsonNull}} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit.text)) {
				p.pos += len(lit.text)
				v = &jsonValue{kind: lit.kind, text: lit.text}
				break
			}
		}
		if v == nil {
			p.fail("expected a value")
		}
	}
	if p.syntax != nil {
		return nil
	}
	v.raw = p.data[start:p.pos]
	return v
}

func (p *jsonParser) object(path string, depth int) *jsonValue {
	v := &jsonValue{kind: jsonObject}
	p.pos++ // {
	p.space()
	if p.peek() == '}' {
		p.pos++
		return v
	}
	var seen map[string]bool
	for {
		p.space()
		if p.peek() != '"' {
			p.fail("expected a member name in double quotes")
			return nil
		}
		name := p.str(path, true)
		if p.syntax != nil {
			return nil
		}
		field := joinPath(path, name)
		if seen == nil {
			seen = make(map[string]bool)
		}
		if seen[name] {
			p.flag(field, "appears more than once; each member may appear only once")
		}
		seen[name] = true
		p.space()
		if p.peek() != ':' {
			p.fail("expected ':' after a member name")
			return nil
		}
		p.pos++
		p.space()
		m := p.value(field, depth+1)
		if p.syntax != nil {
			return nil
		}
		v.members = append(v.members, jsonMember{name, m})
		p.space()
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v
		default:
			p.fail("expected ',' or '}' after a member")
			return nil
		}
	}
}

func (p *jsonParser) array(path string, depth int) *jsonValue {
	v := &jsonValue{kind: jsonArray}
	p.pos++ // [
	p.space()
	if p.peek() == ']' {
		p.pos++
		return v
	}
	for {
		p.space()
		item := p.value(path+"["+strconv.Itoa(len(v.items))+"]", depth+1)
		if p.syntax != nil {
			return nil
		}
		v.items = append(v.items, item)
		p.space()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v
		default:
			p.fail("expected ',' or ']' after an array item")
			return nil
		}
	}
}

func (p *jsonParser) number() *jsonValue {
	start := p.pos
	digits := func() bool {
		n := p.pos
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
		}
		return p.pos > n
	}
	if p.peek() == '-' {
		p.pos++
	}
	if p.peek() == '0' {
		p.pos++
	} else if !digits() {
		p.fail("expected a digit")
		return nil
	}
	if p.peek() == '.' {
		p.pos++
		if !digits() {
			p.fail("expected a digit after '.'")
			return nil
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if !digits() {
			p.fail("expected a digit in the exponent")
			return nil
		}
	}
	return &jsonValue{kind: jsonNumber, text: string(p.data[start:p.pos])}
}

// str reads a string at the parser's position (a double quote). path names
// the string's value, or, for a member name (isName), its object; problems
// with the content are flagged there.
func (p *jsonParser) str(path string, isName bool) string {
	field, what := path, "must"
	if isName {
		what = "a member name must"
	}
	p.pos++ // "
	var b []byte
	for {
		if p.pos >= len(p.data) {
			p.fail("a string is not closed")
			return ""
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			s := string(b)
			if r, ok := findControl(s, !isName); ok {
				p.flag(field, "%s not contain control characters (found %U)", what, r)
			}
			return s
		case c == '\\':
			b = p.escape(b, field, what)
			if p.syntax != nil {
				return ""
			}
		case c < ' ':
			p.fail("a control character must be escaped inside a string")
			return ""
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				p.flag(field, "%s be valid UTF-8 (found byte 0x%02x)", what, c)
			}
			b = append(b, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

// escape reads the escape sequence at the parser's position and appends
// what it stands for to b.
func (p *jsonParser) escape(b []byte, field, what string) []byte {
	p.pos++ // backslash
	c := p.peek()
	if i := strings.IndexByte(`"\/bfnrt`, c); i >= 0 && c != 0 {
		p.pos++
		return append(b, "\"\\/\b\f\n\r\t"[i])
	}
	if c != 'u' {
		p.fail("invalid escape sequence")
		return nil
	}
	p.pos++
	r, ok := p.hex4()
	if !ok {
		return nil
	}
	switch {
	case r >= 0xD800 && r <= 0xDBFF:
		if bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
			save := p.pos
			p.pos += 2
			lo, ok := p.hex4()
			if !ok {
				return nil
			}
			if lo >= 0xDC00 && lo <= 0xDFFF {
				return utf8.AppendRune(b, 0x10000+(r-0xD800)<<10+(lo-0xDC00))
			}
			p.pos = save
		}
		p.flag(field, "%s not contain an unpaired surrogate (\\u%04X)", what, r)
		return utf8.AppendRune(b, utf8.RuneError)
	case r >= 0xDC00 && r <= 0xDFFF:
		p.flag(field, "%s not contain an unpaired surrogate (\\u%04X)", what, r)
		return utf8.AppendRune(b, utf8.RuneError)
	}
	return utf8.AppendRune(b, r)
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		p.fail("expected four hexadecimal digits after \\u")
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		p.fail("expected four hexadecimal digits after \\u")
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// bindJSON stores j in v as encoding/json would, with decodeJSON's rules.
func bindJSON(j *jsonValue, v reflect.Value, path string) *inputError {
	field := orBody(path)
	t := v.Type()
	if t == rawMessageType {
		v.SetBytes(bytes.Clone(j.raw))
		return nil
	}
	if t.Kind() == reflect.Pointer {
		if j.kind == jsonNull {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return bindJSON(j, v.Elem(), path)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(j.raw); err != nil {
			return badInput(field, "%s", err.Error())
		}
		return nil
	}
	mismatch := func(want string) *inputError {
		return badInput(field, "must be %s, not %s", want, j.kind)
	}
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Interface:
		if j.kind == jsonNull {
			v.SetZero()
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if j.kind != jsonObject {
			return mismatch("an object")
		}
		fields := fieldsOf(t)
		for _, m := range j.members {
			i, ok := fields.index[m.name]
			if !ok {
				return unknownField(joinPath(path, m.name), m.name, fields.names)
			}
			if err := bindJSON(m.value, v.Field(i), joinPath(path, m.name)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if j.kind != jsonObject {
			return mismatch("an object")
		}
		if t.Key().Kind() != reflect.String {
			panic("decodeJSON: map key type " + t.Key().String())
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(j.members)))
		}
		for _, m := range j.members {
			e := reflect.New(t.Elem()).Elem()
			if err := bindJSON(m.value, e, joinPath(path, m.name)); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(m.name).Convert(t.Key()), e)
		}
	case reflect.Slice:
		if j.kind != jsonArray {
			return mismatch("an array")
		}
		s := reflect.MakeSlice(t, len(j.items), len(j.items))
		for i, item := range j.items {
			if err := bindJSON(item, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Interface:
		var x any
		if err := json.Unmarshal(j.raw, &x); err != nil || t.NumMethod() != 0 {
			return mismatch("a value of type " + t.String())
		}
		v.Set(reflect.ValueOf(x))
	case reflect.String:
		if j.kind != jsonString {
			return mismatch("a string")
		}
		v.SetString(j.text)
	case reflect.Bool:
		if j.kind != jsonBool {
			return mismatch("true or false")
		}
		v.SetBool(j.text == "true")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return setNumber(j, v, field)
	default:
		panic("decodeJSON: unsupported type " + t.String())
	}
	return nil
}

// setNumber stores j in v, a number of any size, whole or not, signed or
// not, as strconv reads it.
func setNumber(j *jsonValue, v reflect.Value, field string) *inputError {
	bits := v.Type().Bits()
	want, parse := "a number", func() error {
		f, err := strconv.ParseFloat(j.text, bits)
		v.SetFloat(f)
		return err
	}
	switch {
	case v.CanInt():
		want, parse = "a whole number", func() error {
			n, err := strconv.ParseInt(j.text, 10, bits)
			v.SetInt(n)
			return err
		}
	case v.CanUint():
		want, parse = "a whole number, 0 or more", func() error {
			n, err := strconv.ParseUint(j.text, 10, bits)
			v.SetUint(n)
			return err
		}
	}
	if j.kind != jsonNumber {
		return badInput(field, "must be %s, not %s", want, j.kind)
	}
	if err := parse(); err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return badInput(field, "%s is out of range", shorten(j.text))
		}
		return badInput(field, "must be %s, not %s", want, shorten(j.text))
	}
	return nil
}

func unknownField(field, name string, known []string) *inputError {
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return badInput(field, "unknown field; member names are case-sensitive: did you mean %s?", k)
		}
	}
	return badInput(field, "unknown field; the fields here are %s", strings.Join(known, ", "))
}

// structFields maps a struct type's JSON member names to field indexes.
type structFields struct {
	index map[string]int
	names []string // in field order
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{index: make(map[string]int)}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f.index[name] = i
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}

// destinationError is a subscription URL whose host is a literal address
// the destination policy refuses: it answers 422 naming the field.
type destinationError struct {
	Field, Detail string
}

func (e *destinationError) Error() string { return e.Field + ": " + e.Detail }

// checkDestination refuses a URL (already checked by checkURL) whose host is
// a literal address the policy does not allow. A host name is not looked up
// here: what it resolves to can change, and the dispatcher checks the
// address of every connection it makes.
func checkDestination(p destination.Policy, s string) *destinationError {
	u, err := url.Parse(s)
	if err != nil {
		return nil // checkURL refused it already
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	err = p.Allowed(a)
	var b *destination.BlockedError
	if !errors.As(err, &b) {
		return nil
	}
	article := "a"
	if strings.ContainsAny(b.Class.Name[:1], "aeiou") {
		article = "an"
	}
	return &destinationError{Field: "url", Detail: fmt.Sprintf(
		"the host %s is %s %s address (%s), which Herald does not deliver to by default; to allow it, %s",
		strconv.Quote(u.Hostname()), article, b.Class.Name, b.Range, b.Hint())}
}
