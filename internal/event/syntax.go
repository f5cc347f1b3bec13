package event

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

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
