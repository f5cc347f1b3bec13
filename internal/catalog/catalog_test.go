package catalog

import (
	"testing"

	"github.com/herald-events/herald/internal/store"
)

func entry(t *testing.T, id string, types []string, prefix, suffix string) *Entry {
	t.Helper()
	e, err := NewEntry(store.Subscription{ID: id, State: "active", EventTypes: types,
		SubjectBeginsWith: prefix, SubjectEndsWith: suffix, RetryPolicy: []byte(`{"preset":"eventgrid"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func ids(es []*Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestMatch(t *testing.T) {
	c := New()
	c.Put(entry(t, "s1", []string{"invoice.paid", "invoice.sent"}, "", ""))
	c.Put(entry(t, "s2", nil, "/invoices/", ""))
	c.Put(entry(t, "s3", []string{"herald.endpoint.disabled"}, "", ""))
	c.Put(entry(t, "s4", []string{"invoice.paid"}, "", ".pdf"))
	cases := []struct {
		typ, subject string
		want         []string
	}{
		{"invoice.paid", "/invoices/1.pdf", []string{"s1", "s4", "s2"}},
		{"invoice.paid", "/orders/1.txt", []string{"s1"}},
		{"invoice.sent", "/invoices/1", []string{"s1", "s2"}},
		{"other", "/invoices/1", []string{"s2"}},
		{"herald.endpoint.disabled", "/invoices/x", []string{"s3"}}, // the catch-all does not get herald.*
	}
	for _, tc := range cases {
		got := ids(c.Match(tc.typ, tc.subject))
		if len(got) != len(tc.want) {
			t.Errorf("Match(%s, %s) = %v, want %v", tc.typ, tc.subject, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Match(%s, %s) = %v, want %v", tc.typ, tc.subject, got, tc.want)
				break
			}
		}
	}
	c.Remove("s1")
	if got := ids(c.Match("invoice.sent", "/x")); len(got) != 0 {
		t.Fatalf("after Remove: %v", got)
	}
}
