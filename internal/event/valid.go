package event

// This file holds validJSON, a faster stand-in for encoding/json.Valid on
// the publish path: json.Valid runs its scanner's state machine with an
// indirect call per byte, while validJSON walks the grammar directly and
// skips the plain bytes of strings with a table lookup each.

// maxNestingDepth is the deepest nesting of arrays and objects validJSON
// accepts. encoding/json's scanner has the same limit (its maxNestingDepth).
const maxNestingDepth = 10000

// Byte classes, the bits of jsonClass's entries.
const (
	classPlain  = 1 << iota // a byte a string literal holds as it is
	classSpace              // JSON whitespace: space, \t, \n, \r
	classHex                // a hexadecimal digit
	classEscape             // a byte allowed after a backslash, 'u' aside
)

// jsonClass maps each byte to its classes. Every byte from 0x20 up except
// '"' and '\\' is plain, including all bytes from 0x80 up: like
// encoding/json.Valid, validJSON does not check UTF-8.
var jsonClass = func() (t [256]uint8) {
	for c := 0x20; c < 256; c++ {
		t[c] = classPlain
	}
	t['"'] &^= classPlain
	t['\\'] &^= classPlain
	for _, c := range []byte(" \t\n\r") {
		t[c] |= classSpace
	}
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] |= classHex
	}
	for _, c := range []byte(`"\/bfnrt`) {
		t[c] |= classEscape
	}
	return t
}()

// validJSON reports whether b is exactly one JSON value (RFC 8259), with
// optional whitespace (space, \t, \n, \r) around it. It accepts exactly what
// encoding/json.Valid accepts, and is checked against it by FuzzValidJSON:
//
//   - numbers are -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, of any
//     length and magnitude (1e400 is valid);
//   - strings may not hold bytes below 0x20, and their escapes are \" \\ \/
//     \b \f \n \r \t and \u with four hex digits (lone surrogates included);
//   - UTF-8 is not checked: any byte from 0x80 up is accepted inside a
//     string (and rejected outside one), as json.Valid does;
//   - arrays and objects may nest at most maxNestingDepth (10000) deep, the
//     limit of encoding/json's scanner.
//
// It works in one pass without recursion, and allocates only when arrays
// and objects nest deeper than 64 levels (a bit a level beyond that).
func validJSON(b []byte) bool {
	var open containerStack
	i := skipJSONSpace(b, 0)

value: // a value must start at b[i]
	if i >= len(b) {
		return false
	}
	switch c := b[i]; c {
	case '{', '[':
		if !open.push(c == '{') {
			return false
		}
		i = skipJSONSpace(b, i+1)
		if i < len(b) && b[i] == c+2 { // '}' or ']': empty container
			open.pop()
			i++
			goto next
		}
		if c == '{' {
			goto member
		}
		goto value
	case '"':
		i = endOfString(b, i+1)
	case 't':
		i = endOfLiteral(b, i, "true")
	case 'f':
		i = endOfLiteral(b, i, "false")
	case 'n':
		i = endOfLiteral(b, i, "null")
	default:
		i = endOfNumber(b, i)
	}
	if i < 0 {
		return false
	}

next: // a value ended just before b[i]
	i = skipJSONSpace(b, i)
	if open.depth == 0 {
		return i == len(b)
	}
	if i >= len(b) {
		return false
	}
	switch b[i] {
	case ',':
		i = skipJSONSpace(b, i+1)
		if open.inObject() {
			goto member
		}
		goto value
	case '}', ']':
		if (b[i] == '}') != open.inObject() {
			return false
		}
		open.pop()
		i++
		goto next
	}
	return false

member: // an object member (key, colon, value) must start at b[i]
	if i >= len(b) || b[i] != '"' {
		return false
	}
	if i = endOfString(b, i+1); i < 0 {
		return false
	}
	i = skipJSONSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipJSONSpace(b, i+1)
	goto value
}

// containerStack records, for each array or object open around the
// current position, whether it is an object: one bit a level, the first 64
// levels in a word of its own and the rest in a slice allocated only for
// deeper nesting.
type containerStack struct {
	depth int      // the number of open containers
	low   uint64   // bit d-1 is set if level d (1 to 64) is an object
	high  []uint64 // bit (d-65)%64 of high[(d-65)/64] likewise, for d > 64
}

// push opens a container one level deeper; it reports false when that
// would pass maxNestingDepth.
func (s *containerStack) push(object bool) bool {
	d := s.depth
	if d == maxNestingDepth {
		return false
	}
	s.depth++
	word := &s.low
	if d >= 64 {
		d -= 64
		if d>>6 == len(s.high) {
			s.high = append(s.high, 0)
		}
		word = &s.high[d>>6]
	}
	if object {
		*word |= 1 << (d & 63)
	} else {
		*word &^= 1 << (d & 63)
	}
	return true
}

// pop closes the innermost container; depth must be positive.
func (s *containerStack) pop() { s.depth-- }

// inObject reports whether the innermost container is an object; depth
// must be positive.
func (s *containerStack) inObject() bool {
	d := s.depth - 1
	if d < 64 {
		return s.low>>d&1 != 0
	}
	d -= 64
	return s.high[d>>6]>>(d&63)&1 != 0
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && jsonClass[b[i]]&classSpace != 0 {
		i++
	}
	return i
}

// endOfString returns the index just past the closing quote of the string
// whose contents start at b[i], or -1 when the string is unterminated,
// holds a byte below 0x20 or has an invalid escape.
func endOfString(b []byte, i int) int {
	for {
		// The fast path: skip plain bytes, four at a time while they last.
		for len(b)-i >= 4 {
			if jsonClass[b[i]]&jsonClass[b[i+1]]&jsonClass[b[i+2]]&jsonClass[b[i+3]]&classPlain == 0 {
				break
			}
			i += 4
		}
		for i < len(b) && jsonClass[b[i]]&classPlain != 0 {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i = endOfEscape(b, i+1); i < 0 {
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// endOfEscape returns the index just past the escape sequence whose
// backslash is just before b[i], or -1 when it is not a valid one.
func endOfEscape(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	if jsonClass[b[i]]&classEscape != 0 {
		return i + 1
	}
	if b[i] != 'u' || len(b)-i < 5 {
		return -1
	}
	h := b[i+1 : i+5]
	if jsonClass[h[0]]&jsonClass[h[1]]&jsonClass[h[2]]&jsonClass[h[3]]&classHex == 0 {
		return -1
	}
	return i + 5
}

// endOfLiteral returns the index just past the literal lit (true, false or
// null) at b[i], or -1 when b does not hold lit there.
func endOfLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// endOfNumber returns the index just past the number starting at b[i], or
// -1 when b[i] does not start a valid one. Only the number's own grammar is
// checked: what follows it is the caller's business ("01" is the number 0
// followed by 1).
func endOfNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = endOfDigits(b, i+1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = endOfDigits(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// endOfDigits returns the index just past the run of one or more decimal
// digits at b[i], or -1 when b[i] is not a digit.
func endOfDigits(b []byte, i int) int {
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return -1
	}
	return skipDigits(b, i+1)
}

// skipDigits returns the index of the first byte at or after i that is not
// a decimal digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
