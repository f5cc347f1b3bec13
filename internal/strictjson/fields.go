package strictjson

import (
	"strings"
	"unicode/utf8"
)

// Errorf returns the problem of the value at field (a JSON path, as Error's
// Field), its detail formatted as fmt.Sprintf does: what a check of a
// decoded value returns.
func Errorf(field, format string, args ...any) *Error { return errorf(field, format, args...) }

// CheckText checks a text field: at most max bytes, no control characters
// (tab included), valid UTF-8 and, when required, not blank.
func CheckText(field, s string, max int, required bool) *Error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return errorf(field, "must not be empty")
	case len(s) > max:
		return errorf(field, "must be at most %d bytes, got %d", max, len(s))
	}
	if r, ok := FindControl(s, false); ok {
		return errorf(field, "must not contain control characters (found %U)", r)
	}
	if !utf8.ValidString(s) {
		return errorf(field, "must be valid UTF-8")
	}
	return nil
}
