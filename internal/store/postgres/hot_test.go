package postgres

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// setColumn matches one assignment of an UPDATE's SET list.
var setColumn = regexp.MustCompile(`(?:SET|,)\s*(\w+)\s*=`)

// TestOutcomeUpdateIsHOTAble: no index of deliveries names, in its key,
// its expressions or its predicate, a column that the outcome's UPDATE
// (ApplyCountedOutcomes) sets, and the table keeps room on its pages
// (fillfactor 50), so that every outcome can be a HOT update
// (migrations/0021_open_deliveries.sql). An index on such a column, or
// one whose WHERE reads one, makes every outcome a new row version off
// its page with an entry in each index.
func TestOutcomeUpdateIsHOTAble(t *testing.T) {
	ctx := context.Background()
	_, conn := migratedConn(t)
	q := queries["ApplyCountedOutcomes"]
	start := strings.Index(q, "UPDATE deliveries AS d SET")
	end := strings.Index(q[start:], "\n\tFROM ")
	if start < 0 || end < 0 {
		t.Fatalf("ApplyCountedOutcomes has no UPDATE deliveries … SET … FROM:\n%s", q)
	}
	set := map[string]*regexp.Regexp{}
	for _, m := range setColumn.FindAllStringSubmatch(q[start:start+end], -1) {
		set[m[1]] = regexp.MustCompile(`\b` + m[1] + `\b`)
	}
	if len(set) < 10 {
		t.Fatalf("read %d columns of the outcome's SET list, want its dozen", len(set))
	}
	rows, err := conn.Query(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = 'deliveries'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		n++
		for c, named := range set {
			if named.MatchString(def) {
				t.Errorf("index %s names %s, which every outcome sets: no outcome can be HOT\n%s", name, c, def)
			}
		}
	}
	if err := rows.Err(); err != nil || n == 0 {
		t.Fatalf("read %d indexes of deliveries: %v", n, err)
	}
	var opts []string
	if err := conn.QueryRow(ctx, `SELECT COALESCE(reloptions, '{}') FROM pg_class WHERE oid = 'deliveries'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(opts, ","), "fillfactor=50") {
		t.Errorf("deliveries' options %v, want fillfactor=50 (room on each page for the outcome's new version)", opts)
	}
}
