package filter

import (
	"unicode"
	"unicode/utf8"
)

// appendFold appends s case-folded to dst: every rune replaced by one
// canonical member of its Unicode simple case folding orbit (the ASCII
// lowercase letter when the orbit holds an ASCII letter, so "K", "k" and the
// Kelvin sign all become "k"; else the orbit's smallest rune). Two strings
// are equal ignoring case (strings.EqualFold) exactly when their folded
// forms are equal, and a folded string contains, begins or ends with a
// folded value exactly when the original does so ignoring case, since
// folding maps rune to rune. Invalid UTF-8 becomes U+FFFD. ASCII text takes
// a fast path.
func appendFold(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				dst = utf8.AppendRune(dst, foldRune(r))
			}
			return dst
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// foldRune returns r's canonical case-folded form (see appendFold).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	best := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return foldRune(f)
		}
		best = min(best, f)
	}
	return best
}
