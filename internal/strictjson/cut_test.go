package strictjson

import (
	"testing"
	"unicode/utf8"
)

// TestCut: a cut never splits a character, keeps what fits, and leaves a
// short string alone.
func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"},         // é is 2 bytes: not split
		{"aé", 3, "aé"},        // fits whole
		{"€€", 4, "€"},         // € is 3 bytes
		{"€€", 2, ""},          // nothing whole fits
		{"a\xffb", 2, "a\xff"}, // an invalid byte is a character of its own
	} {
		got := Cut(c.s, c.n)
		if got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if len(got) > c.n {
			t.Errorf("Cut(%q, %d) = %q: longer than %d", c.s, c.n, got, c.n)
		}
		if utf8.ValidString(c.s) && !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q: not valid UTF-8", c.s, c.n, got)
		}
	}
}
