package eventtype_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
)

// TestCheckChargesWorkBeforeValidating: a request's checks are charged
// to one budget, each event's before it is validated, counting each value
// the subschemas that may apply to it (1,000 integers against items of
// one subschema: 1,001; against items of an anyOf of three: 4,001). An
// event that would pass the budget refuses the request with a
// *WorkError, even one whose data breaks its schema (it was not
// validated); within the budget the check is unchanged; 0 is no limit.
func TestCheckChargesWorkBeforeValidating(t *testing.T) {
	c := eventtype.NewCatalog(&loader{version: 1, types: []eventtype.EventType{
		newType(t, `{"name": "ints", "schemas": {"1": {"type": "array", "items": {"type": "integer"}}}}`),
		newType(t, `{"name": "any3", "schemas": {"1": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}}}}`),
	}}, nil, 0, nil)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	arr := "[" + strings.TrimSuffix(strings.Repeat("1,", 1000), ",") + "]"
	ev := func(id, typ, data string) string {
		return `{"specversion": "1.0", "id": "` + id + `", "source": "/s", "type": "` + typ + `", "data": ` + data + `}`
	}
	bad := strings.Replace(arr, "1]", `"x"]`, 1) // its last item breaks ints
	for _, tc := range []struct {
		name    string
		evs     []string
		mode    string
		max     int
		refused int // the WorkError's limit; 0: none
		field   string
	}{
		{"one of 1,001 within 1,001", []string{ev("a", "ints", arr)}, eventtype.ModeEnforce, 1001, 0, ""},
		{"one of 1,001 past 1,000", []string{ev("a", "ints", arr)}, eventtype.ModeEnforce, 1000, 1000, ""},
		{"two of 1,001 past 2,001", []string{ev("a", "ints", arr), ev("b", "ints", arr)}, eventtype.ModeWarn, 2001, 2001, ""},
		{"a bad one past the budget is not validated", []string{ev("a", "ints", arr), ev("b", "ints", bad)}, eventtype.ModeEnforce, 1500, 1500, ""},
		{"a bad one within it is refused as ever", []string{ev("a", "ints", arr), ev("b", "ints", bad)}, eventtype.ModeEnforce, 2002, 0, "events[1].data/999"},
		{"anyOf of three: 4,001", []string{ev("a", "any3", arr)}, eventtype.ModeEnforce, 4001, 0, ""},
		{"anyOf of three past 4,000", []string{ev("a", "any3", arr)}, eventtype.ModeEnforce, 4000, 4000, ""},
		{"no limit", []string{ev("a", "any3", arr), ev("b", "ints", arr)}, eventtype.ModeEnforce, 0, 0, ""},
	} {
		evs, err := event.ParseWith(map[string][]string{"Content-Type": {"application/cloudevents-batch+json"}},
			[]byte("["+strings.Join(tc.evs, ",")+"]"), event.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Check(evs, tc.mode, false, tc.max)
		var we *eventtype.WorkError
		var rf *eventtype.Refusal
		switch {
		case tc.refused > 0 && (!errors.As(err, &we) || we.Limit != tc.refused || !errors.Is(err, eventtype.ErrWork)):
			t.Errorf("%s: %v; want a *WorkError of %d", tc.name, err, tc.refused)
		case tc.refused == 0 && tc.field != "" && (!errors.As(err, &rf) || rf.Field != tc.field):
			t.Errorf("%s: %v; want a refusal naming %s", tc.name, err, tc.field)
		case tc.refused == 0 && tc.field == "" && err != nil:
			t.Errorf("%s: %v; want it accepted", tc.name, err)
		}
	}
}

// TestWarnLinesAreCoalesced: under warn, a request of 1,000 events that
// break their schema writes one warn line (it wrote 1,000), and further
// ones of the type within WarnLogInterval none; the first after it writes
// one saying how many it did not write (suppressed) and since when. Each
// type has its own lines, and the counter counts every event. Timed by a
// fake clock.
func TestWarnLinesAreCoalesced(t *testing.T) {
	c := eventtype.NewCatalog(&loader{version: 1, types: []eventtype.EventType{
		newType(t, `{"name": "a", "schemas": {"1": {"type": "integer"}}}`),
		newType(t, `{"name": "b", "schemas": {"1": {"type": "integer"}}}`),
	}}, nil, 0, nil)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	ch := eventtype.NewChecker(c, func(context.Context, string) (string, bool, error) { return "warn", false, nil }, reg,
		slog.New(slog.NewTextHandler(&logs, nil)))
	clk := clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	ch.Clock = clk
	publish := func(typ string, n int) {
		t.Helper()
		evs := make([]string, n)
		for i := range evs {
			evs[i] = fmt.Sprintf(`{"specversion": "1.0", "id": "%d", "source": "/s", "type": "%s", "data": "x"}`, i, typ)
		}
		parsed, err := event.ParseWith(map[string][]string{"Content-Type": {"application/cloudevents-batch+json"}},
			[]byte("["+strings.Join(evs, ",")+"]"), event.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := ch.Check(context.Background(), "acc_default", parsed); err != nil || len(out) != n {
			t.Fatalf("Check: %d, %v", len(out), err)
		}
	}
	lines := func() []string {
		l := strings.Split(strings.TrimSpace(logs.String()), "\n")
		logs.Reset()
		return slices.DeleteFunc(l, func(s string) bool { return s == "" })
	}
	publish("a", 1000)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "type=a") || !strings.Contains(l[0], "suppressed=0") {
		t.Fatalf("1,000 bad events: lines %q; want one, suppressed=0", l)
	}
	clk.Advance(eventtype.WarnLogInterval - time.Second)
	publish("a", 5)
	publish("b", 2)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "type=b") {
		t.Fatalf("5 more of a within the interval, 2 of b: lines %q; want b's alone", l)
	}
	clk.Advance(time.Second)
	publish("a", 1)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "suppressed=1004") || !strings.Contains(l[0], "since_last_line=10s") {
		t.Fatalf("one of a after the interval: lines %q; want one, suppressed=1004, since_last_line=10s", l)
	}
	if n := counted(t, reg, "a"); n != 1006 {
		t.Errorf("herald_schema_violations_total{type=a} = %v; want 1006", n)
	}
}
