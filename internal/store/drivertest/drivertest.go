// Package drivertest holds the checks every store driver
// (internal/store/sqlite, internal/store/postgres) runs from its own
// tests against what the engine (internal/store/engine) asks of it.
package drivertest

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
)

// CheckQueries checks that qs, a driver's statements, hold exactly the
// names the engine runs (engine.Queries), and that each statement's
// parameters are numbered 1 to n without a gap ($n in PostgreSQL, ?n in
// SQLite): the engine passes the same arguments, in the same order, to
// every driver.
func CheckQueries(t *testing.T, qs driver.Queries) {
	t.Helper()
	want := map[driver.Query]bool{}
	for _, q := range engine.Queries() {
		want[q] = true
		if _, ok := qs[q]; !ok {
			t.Errorf("the driver has no statement %q, which the engine runs", q)
		}
	}
	for _, q := range qs.Names() {
		if !want[q] {
			t.Errorf("statement %q is not one the engine runs", q)
		}
		checkParams(t, q, qs[q])
	}
}

// params matches a numbered parameter of either dialect.
var params = regexp.MustCompile(`[$?]([0-9]+)`)

// checkParams checks that text numbers its parameters 1 to n.
func checkParams(t *testing.T, q driver.Query, text string) {
	t.Helper()
	seen := map[int]bool{}
	most := 0
	for _, m := range params.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n] = true
		most = max(most, n)
	}
	for n := 1; n <= most; n++ {
		if !seen[n] {
			t.Errorf("statement %q: parameter %d is missing (it uses up to %d)", q, n, most)
		}
	}
}
