package pgtest

import (
	"strings"
	"testing"
)

// TestSkipNote: the line printed when PostgreSQL tests are skipped names the
// package and the variable that runs them.
func TestSkipNote(t *testing.T) {
	got := skipNote()
	for _, want := range []string{"./internal/store/postgres/pgtest: ", "skipped", EnvURL + "='postgres://", "go test ./..."} {
		if !strings.Contains(got, want) {
			t.Errorf("skip note %q lacks %q", got, want)
		}
	}
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Errorf("skip note %q is not one line", got)
	}
}

// TestWithSearchPath: a URL gets search_path in its query, the
// keyword/value form as one more keyword.
func TestWithSearchPath(t *testing.T) {
	for base, want := range map[string]string{
		"postgres://u@h:5432/db?sslmode=disable":   "postgres://u@h:5432/db?search_path=s1&sslmode=disable",
		"postgresql://u@h/db":                      "postgresql://u@h/db?search_path=s1",
		"host=/tmp dbname=db":                      "host=/tmp dbname=db search_path=s1",
		"host=h user=u password=a:b sslmode=allow": "host=h user=u password=a:b sslmode=allow search_path=s1",
	} {
		if got := WithSearchPath(t, base, "s1"); got != want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", base, got, want)
		}
	}
}
