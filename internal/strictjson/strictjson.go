// Package strictjson decodes JSON into Go values the way encoding/json
// does, but strictly, for input from users: one value and nothing after it,
// no repeated member names at any depth, member names matching struct
// fields exactly, valid UTF-8 without control characters, bounded nesting,
// numbers that fit. Every problem names the JSON path of the value at fault
// ("retry_policy.delays[0]"), for an API's problem documents or a command's
// message. A duration field is a Duration (duration.go): a Go duration
// string, its problems showing how to write one.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Limits of a document.
const (
	MaxDepth     = 32 // nesting of objects and arrays
	MaxFieldName = 64 // bytes of a member name quoted in a problem's field
)

// Error is a problem with one value: Field is its JSON path.
type Error struct {
	Field, Detail string
}

func (e *Error) Error() string { return e.Field + ": " + e.Detail }

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Decode decodes data, one JSON value, into v (a pointer) the way
// encoding/json would, but strictly: data must be exactly one value with
// nothing after it; no object may repeat a member name; member names match
// struct fields' json names exactly (letter case included) and a name that
// matches none is an error; strings must be valid UTF-8 without unpaired
// surrogate escapes or control characters other than tab (and the line
// breaks of a PEM document: see pemLines; and line breaks in a field
// tagged strictjson:"lines", such as a CEL expression's); nesting is at
// most MaxDepth deep; null is accepted only where encoding/json would
// store it (pointers, slices, maps, json.RawMessage), and numbers must fit
// their Go type. path names the value in problems ("" for the request body,
// whose problems name their field from its top, or "body").
//
// Anything Decode accepts, encoding/json decodes to the same value.
func Decode(data []byte, path string, v any) *Error {
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
	// lines: a string whose only control characters but tabs are line
	// breaks (LF, CR), refused when bound unless its field takes them
	// (the tag strictjson:"lines": see bindStruct).
	lines bool
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
	syntax  *Error
	content *Error
	// lines says the last string read had line breaks (jsonValue.lines).
	lines bool
}

// parseJSON parses data, which must hold exactly one JSON value. path names
// the value in problems about its content.
func parseJSON(data []byte, path string) (*jsonValue, *Error) {
	p := &jsonParser{data: data}
	p.space()
	if p.pos == len(data) {
		return nil, errorf(orBody(path), "is empty; it must be a JSON object")
	}
	v := p.value(path, 0)
	if p.syntax == nil {
		if p.space(); p.pos < len(data) {
			p.syntax = errorf("body", "must hold one JSON value and nothing after it, but more follows at byte %d: %s", p.pos+1, p.describe())
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
		p.syntax = errorf("body", "is not valid JSON: %s at byte %d (%s)", what, p.pos+1, p.describe())
	}
}

func (p *jsonParser) flag(field, format string, args ...any) {
	if p.content == nil {
		p.content = errorf(orBody(field), format, args...)
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
		if depth >= MaxDepth {
			p.fail(fmt.Sprintf("objects and arrays nest more than %d deep", MaxDepth))
			return nil
		}
		if c == '{' {
			v = p.object(path, depth)
		} else {
			v = p.array(path, depth)
		}
	case c == '"':
		v = &jsonValue{kind: jsonString, text: p.str(path, false)}
		v.lines, p.lines = p.lines, false
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
		field := JoinPath(path, name)
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
			if r, ok := FindControl(s, !isName); ok && (isName || !pemLines(s)) {
				if !isName && onlyLineBreaks(s) {
					p.lines = true // bindJSON decides
				} else {
					p.flag(field, "%s not contain control characters (found %U)", what, r)
				}
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
// asOptional is v as an Optional (a member of a change), when it is one.
func asOptional(v reflect.Value) (optional, bool) {
	if v.Kind() != reflect.Struct || !v.CanAddr() {
		return nil, false
	}
	o, ok := v.Addr().Interface().(optional)
	return o, ok
}

func bindJSON(j *jsonValue, v reflect.Value, path string) *Error {
	field := orBody(path)
	t := v.Type()
	if t == rawMessageType {
		if err := refuseLines(j, path); err != nil {
			return err
		}
		v.SetBytes(bytes.Clone(j.raw))
		return nil
	}
	if o, ok := asOptional(v); ok {
		set, value := o.target()
		*set = true
		return bindJSON(j, value, path)
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
		if err := refuseLines(j, path); err != nil {
			return err
		}
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(j.raw); err != nil {
			return errorf(field, "%s", err.Error())
		}
		return nil
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
		return bindStruct(j, v, path)
	case reflect.Map:
		return bindMap(j, v, path)
	case reflect.Slice:
		return bindSlice(j, v, path)
	case reflect.Interface:
		if err := refuseLines(j, path); err != nil {
			return err
		}
		var x any
		if err := json.Unmarshal(j.raw, &x); err != nil || t.NumMethod() != 0 {
			return mismatch(j, field, "a value of type "+t.String())
		}
		v.Set(reflect.ValueOf(x))
	case reflect.String:
		if j.kind != jsonString {
			return mismatch(j, field, "a string")
		}
		if err := refuseLines(j, path); err != nil {
			return err
		}
		v.SetString(j.text)
	case reflect.Bool:
		if j.kind != jsonBool {
			return mismatch(j, field, "true or false")
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

// KindOf names the kind of the JSON value raw (valid JSON, no white space
// before it), with an article, for a problem's detail: "a string", "an
// object", "null"; "nothing" for no bytes.
func KindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return jsonString.String()
	case '{':
		return jsonObject.String()
	case '[':
		return jsonArray.String()
	case 't', 'f':
		return jsonBool.String()
	case 'n':
		return jsonNull.String()
	}
	return jsonNumber.String()
}

// mismatch is the error for a JSON value of the wrong kind at field.
func mismatch(j *jsonValue, field, want string) *Error {
	return errorf(field, "must be %s, not %s", want, j.kind)
}

// bindStruct stores the object j in the struct v member by member; a member
// the struct has no field for is an error naming the fields it has.
func bindStruct(j *jsonValue, v reflect.Value, path string) *Error {
	if j.kind != jsonObject {
		return mismatch(j, orBody(path), "an object")
	}
	fields := fieldsOf(v.Type())
	for _, m := range j.members {
		i, ok := fields.index[m.name]
		if !ok {
			return unknownField(JoinPath(path, m.name), m.name, fields.names)
		}
		if fields.lines[i] {
			allowLines(m.value)
		}
		if err := bindJSON(m.value, v.Field(i), JoinPath(path, m.name)); err != nil {
			return err
		}
	}
	return nil
}

// onlyLineBreaks reports whether the only control characters of s but
// tabs are line breaks (LF, CR).
func onlyLineBreaks(s string) bool {
	_, found := FindControl(strings.NewReplacer("\r", "", "\n", "").Replace(s), true)
	return !found
}

// refuseLines is the error of the first string in j that holds line
// breaks (jsonValue.lines) its field does not take; nil when there is
// none.
func refuseLines(j *jsonValue, path string) *Error {
	switch {
	case j.lines:
		r, _ := FindControl(j.text, true)
		return errorf(orBody(path), "must not contain control characters (found %U)", r)
	case j.kind == jsonObject:
		for _, m := range j.members {
			if err := refuseLines(m.value, JoinPath(path, m.name)); err != nil {
				return err
			}
		}
	case j.kind == jsonArray:
		for i, item := range j.items {
			if err := refuseLines(item, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// allowLines lets every string in j hold line breaks: its field is tagged
// strictjson:"lines".
func allowLines(j *jsonValue) {
	j.lines = false
	for _, m := range j.members {
		allowLines(m.value)
	}
	for _, item := range j.items {
		allowLines(item)
	}
}

// bindMap stores the object j in the map v (made if nil), whose keys must be
// strings.
func bindMap(j *jsonValue, v reflect.Value, path string) *Error {
	t := v.Type()
	if j.kind != jsonObject {
		return mismatch(j, orBody(path), "an object")
	}
	if t.Key().Kind() != reflect.String {
		panic("decodeJSON: map key type " + t.Key().String())
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(t, len(j.members)))
	}
	for _, m := range j.members {
		e := reflect.New(t.Elem()).Elem()
		if err := bindJSON(m.value, e, JoinPath(path, m.name)); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(m.name).Convert(t.Key()), e)
	}
	return nil
}

// bindSlice stores the array j in v as a new slice; v is left as it was if
// an item does not bind.
func bindSlice(j *jsonValue, v reflect.Value, path string) *Error {
	if j.kind != jsonArray {
		return mismatch(j, orBody(path), "an array")
	}
	s := reflect.MakeSlice(v.Type(), len(j.items), len(j.items))
	for i, item := range j.items {
		if err := bindJSON(item, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// setNumber stores j in v, a number of any size, whole or not, signed or
// not, as strconv reads it.
func setNumber(j *jsonValue, v reflect.Value, field string) *Error {
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
		return errorf(field, "must be %s, not %s", want, j.kind)
	}
	if err := parse(); err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return errorf(field, "%s is out of range", Shorten(j.text))
		}
		return errorf(field, "must be %s, not %s", want, Shorten(j.text))
	}
	return nil
}

// unknownField is the problem of a member name that matches no field: it
// names the field the member was probably meant for (Closest), and lists
// the fields.
func unknownField(field, name string, known []string) *Error {
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return errorf(field, "unknown field; member names are case-sensitive: did you mean %s?", k)
		}
	}
	if k := Closest(name, known); k != "" {
		return errorf(field, "unknown field; did you mean %s? The fields here are %s", k, strings.Join(known, ", "))
	}
	return errorf(field, "unknown field; the fields here are %s", strings.Join(known, ", "))
}

// structFields maps a struct type's JSON member names to field indexes.
type structFields struct {
	index map[string]int
	names []string // in field order
	// lines: the fields tagged strictjson:"lines", whose strings (and
	// those within them) may hold line breaks (LF, CR).
	lines map[int]bool
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
		if sf.Tag.Get("strictjson") == "lines" {
			if f.lines == nil {
				f.lines = map[int]bool{}
			}
			f.lines[i] = true
		}
	}
	fieldCache.Store(t, f)
	return f
}

// Shorten cuts s to at most MaxFieldName bytes on a character boundary,
// marking the cut with "...", and makes it valid UTF-8.
func Shorten(s string) string {
	if len(s) <= MaxFieldName {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(Cut(s, MaxFieldName), "\uFFFD") + "..."
}

// Cut is s when it has at most n bytes, else its longest prefix of at
// most n bytes that ends where a character begins (so a valid UTF-8 s
// stays valid). It is the one place text shown or stored is cut to a
// bound; callers add their own mark of the cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// JoinPath names the member name of the object at path, shortening a
// long name and writing an empty one as "".
func JoinPath(path, name string) string {
	if name == "" {
		name = `""`
	}
	if path == "" {
		return Shorten(name)
	}
	return path + "." + Shorten(name)
}

// pemLines reports whether s is a PEM document (RFC 7468: a certificate,
// a private key), whose lines it may break with LF or CRLF: it begins with
// "-----BEGIN ", and it has no control character but those line breaks.
// Its fields still check what they hold (a header value refuses line
// breaks, whatever they hold).
func pemLines(s string) bool {
	if !strings.HasPrefix(s, "-----BEGIN ") {
		return false
	}
	_, found := FindControl(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", ""), "\n", ""), false)
	return !found
}

// FindControl returns the first control character in s (U+0000 to U+001F,
// U+007F to U+009F), skipping tabs when allowTab.
func FindControl(s string, allowTab bool) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) && !(allowTab && r == '\t') {
			return r, true
		}
	}
	return 0, false
}
