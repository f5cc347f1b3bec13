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
