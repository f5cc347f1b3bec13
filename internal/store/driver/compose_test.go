package driver

import "testing"

func TestWhere(t *testing.T) {
	qs := Queries{
		"Page":    "SELECT x FROM t /*where*/ ORDER BY id LIMIT $1",
		"PageQ":   "SELECT x FROM t /*where*/ ORDER BY id LIMIT ?1",
		"OfA":     "a = $1 AND b <> '$2'",
		"OfAQ":    "+a = ?1",
		"Between": "id >= $1 AND id < $2",
		"None":    "false",
		"Arms":    "SELECT x FROM t /*where*/ AND y UNION ALL SELECT x FROM u /*where*/ AND z LIMIT $1",
	}
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Where("Page"), "SELECT x FROM t /*where*/ ORDER BY id LIMIT $1"},
		{Where("Page", "OfA"), "SELECT x FROM t WHERE (a = $1 AND b <> '$2') ORDER BY id LIMIT $2"},
		{Where("Page", "Between", "OfA", "None", "Between"),
			"SELECT x FROM t WHERE (id >= $1 AND id < $2) AND (a = $3 AND b <> '$2') AND (false) AND (id >= $4 AND id < $5) ORDER BY id LIMIT $6"},
		{Where("PageQ", "OfAQ", "OfAQ"), "SELECT x FROM t WHERE (+a = ?1) AND (+a = ?2) ORDER BY id LIMIT ?3"},
		{Where("Arms", "OfA", "Between"),
			"SELECT x FROM t WHERE (a = $1 AND b <> '$2') AND (id >= $2 AND id < $3) AND y UNION ALL SELECT x FROM u WHERE (a = $1 AND b <> '$2') AND (id >= $2 AND id < $3) AND z LIMIT $4"},
	} {
		got, err := qs.SQL(tc.q)
		if err != nil || got != tc.want {
			t.Errorf("SQL(%q) = %q, %v; want %q", tc.q, got, err, tc.want)
		}
	}
	for _, q := range []Query{Where("Page", "Missing"), Where("OfA", "OfA"), Where("Missing", "OfA")} {
		if _, err := qs.SQL(q); err == nil {
			t.Errorf("SQL(%q): no error", q)
		}
	}
}
