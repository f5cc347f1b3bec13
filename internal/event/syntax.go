package event

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// This file says in a problem's words what encoding/json, encoding/base64
// and net/url say in theirs, so that no Go error text reaches a client.

// syntaxContexts turn what encoding/json's scanner says it was looking for
// at an invalid character into what a client should have sent there.
var syntaxContexts = []struct{ scanner, want string }{
	{"looking for beginning of value", "expected a value"},
	{"looking for beginning of object key string", "expected a member name in double quotes"},
	{"after object key:value pair", "expected ',' or '}' after a member"},
	{"after object key", "expected ':' after a member name"},
	{"after array element", "expected ',' or ']' after an array item"},
	{"after top-level value", "expected nothing after the JSON value"},
	{"in string literal", "a control character must be escaped inside a string"},
	{"in string escape code", "invalid escape sequence"},
	{`in \u hexadecimal character escape`, `expected four hexadecimal digits after \u`},
	{"in numeric literal", "expected a digit"},
	{"in literal", "expected true, false or null"},
	{"exceeded max depth", fmt.Sprintf("objects and arrays nest more than %d deep", maxNestingDepth)},
}

// syntaxDetail says, in a problem's words rather than encoding/json's,
// where b, which is not valid JSON, goes wrong: `not valid JSON: expected a
// value at byte 7 (found '}')`. Only for the error path: it decodes b
// again to find out.
func syntaxDetail(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return "not valid JSON"
	}
	at := int(se.Offset) // the 1-based position of the byte at fault
	if at >= len(b) && !strings.HasPrefix(se.Error(), "invalid character") {
		return "not valid JSON: it ends too soon, at byte " + fmt.Sprint(len(b)) +
			" (a string, array or object is not closed, or a value is missing)"
	}
	want := "unexpected character"
	for _, c := range syntaxContexts {
		if strings.HasSuffix(se.Error(), c.scanner) || strings.Contains(se.Error(), " "+c.scanner) {
			want = c.want
			break
		}
	}
	found := "the body ends there"
	if at >= 1 && at <= len(b) {
		found = describeByte(b[at-1])
	}
	return fmt.Sprintf("not valid JSON: %s at byte %d (%s)", want, at, found)
}

// describeByte names a byte of a body for a problem's detail.
func describeByte(c byte) string {
	if c > ' ' && c < 0x7f {
		return fmt.Sprintf("found %q", c)
	}
	return fmt.Sprintf("found byte 0x%02x", c)
}

// base64Detail says why s, a data_base64 value, is not standard base64
// (err from base64.StdEncoding): the character at fault when it is not one
// of base64's, else the form it must have.
func base64Detail(s string, err error) string {
	const form = "must be standard base64 (A-Z, a-z, 0-9, + and /), padded with = to a multiple of 4 characters"
	var at base64.CorruptInputError
	if errors.As(err, &at) && int(at) < len(s) && !strings.ContainsRune(base64Alphabet, rune(s[at])) {
		return fmt.Sprintf("not valid base64: %s at byte %d; it %s", describeByte(s[at]), int(at)+1, form)
	}
	return "not valid base64: it " + form
}

// base64Alphabet is standard base64's characters, padding included.
const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="

// escapeReason says why esc (from a url.EscapeError) is not a percent
// escape.
func escapeReason(esc url.EscapeError) string {
	return quote(string(esc)) + ` is not "%" followed by two hexadecimal digits (send a "%" itself as %25)`
}

// urlReasons say in plain words what net/url's errors without a type of
// their own mean.
var urlReasons = map[string]string{
	"missing protocol scheme": `it begins with ":"; a scheme comes before it, as in "urn:example:a"`,
	"first path segment in URL cannot contain colon": `the part before its first ":" is not a scheme (letters, digits, "+", "-" and "."), ` +
		`and a reference without one may not hold ":" before its first "/": begin it with "/" or "./", or give a scheme`,
	"missing ']' in host":       `its IPv6 host's "[" has no "]"`,
	"net/url: invalid userinfo": `the user information before "@" holds a character it may not (percent-encode it)`,
}

// urlReason says in plain words why url.Parse refused a URI (err is its
// error), without the input that url.Error repeats.
func urlReason(err error) string {
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return escapeReason(esc)
	case errors.As(err, &host):
		return "its host may not hold " + quote(string(host))
	}
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	msg := err.Error()
	if r, ok := urlReasons[msg]; ok {
		return r
	}
	if strings.HasPrefix(msg, "invalid port") {
		return "the port after its host must be digits"
	}
	return msg
}
