package eventtype_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/strictjson"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// loader is a Loader over a slice, counting its reads.
type loader struct {
	version int64
	types   []eventtype.EventType
	reads   atomic.Int32
}

func (l *loader) EventTypesVersion(context.Context) (int64, error) { return l.version, nil }
func (l *loader) AllEventTypes(context.Context) ([]eventtype.EventType, error) {
	l.reads.Add(1)
	return l.types, nil
}

func newType(t *testing.T, body string) eventtype.EventType {
	t.Helper()
	var in eventtype.Input
	if err := strictjson.Decode([]byte(body), "", &in); err != nil {
		t.Fatal(err)
	}
	et, err := in.New(t0)
	if err != nil {
		t.Fatalf("New(%s): %v", body, err)
	}
	return et
}

const paid = `{"name": "invoice.paid", "schemas": {"1": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number", "minimum": 0}}},
	"2": {"$id": "urn:example:paid:2", "type": "object", "required": ["amount", "currency"]}}}`

// structured parses one structured event.
func structured(t *testing.T, raw string) []event.Event {
	t.Helper()
	evs, err := event.ParseWith(map[string][]string{"Content-Type": {"application/cloudevents+json"}}, []byte(raw),
		event.ParseOptions{AllowReserved: true})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestCatalogRefresh: the catalog reads the store only when its version
// moved, and a version compiled once is shared by every later snapshot.
func TestCatalogRefresh(t *testing.T) {
	src := &loader{version: 1, types: []eventtype.EventType{newType(t, paid)}}
	c := eventtype.NewCatalog(src, nil, 0, nil)
	ctx := context.Background()
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s1, ok := c.Schema("invoice.paid", 1)
	if !ok || c.Len() != 1 {
		t.Fatalf("after the first refresh: %v, %d types", ok, c.Len())
	}
	_ = c.Refresh(ctx)
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the types at an unchanged version; want 1", n)
	}
	src.version = 2
	src.types = append(src.types, newType(t, `{"name": "order.placed"}`))
	_ = c.Refresh(ctx)
	if s, _ := c.Schema("invoice.paid", 1); s != s1 || c.Len() != 2 || src.reads.Load() != 2 {
		t.Fatalf("after the version moved: same schema %v, %d types, %d reads", s == s1, c.Len(), src.reads.Load())
	}
}

// TestCheck: the modes, the versions an event asks for, and catalog_only.
func TestCheck(t *testing.T) {
	src := &loader{version: 1, types: []eventtype.EventType{newType(t, paid)}}
	c := eventtype.NewCatalog(src, nil, 0, nil)
	_ = c.Refresh(context.Background())
	v1 := `{"specversion": "1.0", "id": "1", "source": "/s", "type": "invoice.paid", "dataschema": "https://x.example/paid/v1", "data": {"amount": -1}}`
	for _, tc := range []struct {
		name, ev, mode string
		only           bool
		field          string // of the refusal; "" accepted
		warned         int    // violations returned
	}{
		{"off", v1, "off", false, "", 0},
		{"enforce v1", v1, "enforce", false, "data/amount", 0},
		{"warn v1", v1, "warn", false, "", 1},
		{"enforce newest (2)", strings.Replace(v1, `"dataschema": "https://x.example/paid/v1", `, "", 1), "enforce", false, "data", 0},
		{"enforce by $id", strings.Replace(v1, "https://x.example/paid/v1", "urn:example:paid:2", 1), "enforce", false, "data", 0},
		{"unknown version", strings.Replace(v1, "/v1", "/v3", 1), "enforce", false, "dataschema", 0},
		{"not in the catalog", strings.Replace(v1, "invoice.paid", "invoice.payed", 1), "off", true, "type", 0},
		{"herald's own type", strings.Replace(v1, "invoice.paid", "herald.test", 1), "enforce", true, "", 0},
		{"not in the catalog, catalog_only off", strings.Replace(v1, "invoice.paid", "other", 1), "enforce", false, "", 0},
	} {
		out, err := c.Check(structured(t, tc.ev), tc.mode, tc.only, 0)
		refusal := asRefusal(t, err)
		switch {
		case tc.field != "" && (refusal == nil || refusal.Field != tc.field):
			t.Errorf("%s: refusal %v; want one naming %s", tc.name, refusal, tc.field)
		case tc.field == "" && refusal != nil:
			t.Errorf("%s: refused: %v", tc.name, refusal)
		case tc.warned > 0 && (len(out) != 1 || len(out[0].Violations) != tc.warned || out[0].Version != 1):
			t.Errorf("%s: %+v; want %d violation of version 1", tc.name, out, tc.warned)
		case tc.warned == 0 && out != nil:
			t.Errorf("%s: %+v; want nothing", tc.name, out)
		}
	}
	_, err := c.Check(structured(t, strings.Replace(v1, "invoice.paid", "invoice.payed", 1)), "off", true, 0)
	refusal := asRefusal(t, err)
	if refusal == nil || !strings.Contains(refusal.Detail, `nearest catalog type is "invoice.paid"`) {
		t.Errorf("the refusal of invoice.payed: %v; want the nearest type named", refusal)
	}
}

// TestCheckerWarns: under warn the checker counts each event that breaks
// its schema by type and logs it once, naming its field and keyword.
func TestCheckerWarns(t *testing.T) {
	src := &loader{version: 1, types: []eventtype.EventType{newType(t, paid)}}
	c := eventtype.NewCatalog(src, nil, 0, nil)
	_ = c.Refresh(context.Background())
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	ch := eventtype.NewChecker(c, func(context.Context, string) (string, bool, error) { return "warn", false, nil }, reg,
		slog.New(slog.NewTextHandler(&logs, nil)))
	ev := `{"specversion": "1.0", "id": "1", "source": "/s", "type": "invoice.paid", "dataversion": "1", "data": {"amount": -1}}`
	out, err := ch.Check(context.Background(), "acc_default", structured(t, ev))
	if err != nil || len(out) != 1 || out[0].Violations[0].Keyword != "minimum" {
		t.Fatalf("Check = %+v, %v", out, err)
	}
	if n := counted(t, reg, "invoice.paid"); n != 1 {
		t.Errorf("herald_schema_violations_total{type=invoice.paid} = %v; want 1", n)
	}
	if l := logs.String(); strings.Count(l, "breaks its schema") != 1 || !strings.Contains(l, "field=data/amount") || !strings.Contains(l, "keyword=minimum") {
		t.Errorf("log %q; want one line naming data/amount and minimum", l)
	}
	bad := eventtype.NewChecker(c, func(context.Context, string) (string, bool, error) { return "", false, errors.New("store away") }, nil, nil)
	if _, err := bad.Check(context.Background(), "acc_default", structured(t, ev)); err == nil {
		t.Errorf("Check with the settings unreadable: no error")
	}
}

// TestInput: the rules of a type's fields.
func TestInput(t *testing.T) {
	et := newType(t, paid)
	for body, field := range map[string]string{
		`{"name": "herald.Thing"}`:                                   "name",
		`{"name": "ASYNCAPI.json"}`:                                  "name",
		`{"name": ".."}`:                                             "name",
		`{"name": "."}`:                                              "name",
		`{"name": "a", "schemas": {"0": {}}}`:                        "schemas.0",
		`{"name": "a", "schemas": {"33": {}}}`:                       "schemas.33",
		`{"name": "a", "schemas": {"1": {"type": 5}}}`:               "schemas.1",
		`{"name": "a", "schemas": {"1": {"$ref": "file:///etc"}}}`:   "schemas.1",
		`{"name": "a", "examples": [1,2,3,4,5,6,7,8,9,10,11]}`:       "examples",
		`{"name": "a", "group": "` + strings.Repeat("g", 201) + `"}`: "group",
	} {
		var in eventtype.Input
		_ = strictjson.Decode([]byte(body), "", &in)
		_, err := in.New(t0)
		var se *strictjson.Error
		if !errors.As(err, &se) || se.Field != field {
			t.Errorf("New(%s) = %v; want a problem naming %s", body, err, field)
		}
	}
	change := func(body string) error {
		var in eventtype.Input
		_ = strictjson.Decode([]byte(body), "", &in)
		cp := et
		cp.Schemas = map[int]json.RawMessage{}
		for k, v := range et.Schemas {
			cp.Schemas[k] = v
		}
		return in.Apply(&cp, t0)
	}
	var ie *eventtype.ImmutableError
	if err := change(`{"schemas": {"2": {"type": "object"}}}`); !errors.As(err, &ie) || ie.Field() != "schemas.2" {
		t.Errorf("changing version 2: %v; want an ImmutableError of schemas.2", err)
	}
	if err := change(`{"schemas": {"2": {"$id": "urn:example:paid:2",   "type": "object", "required": ["amount", "currency"]}}}`); err != nil {
		t.Errorf("version 2 sent again (spaced differently): %v", err)
	}
	if err := change(`{"name": "other"}`); err == nil {
		t.Errorf("renaming: no error")
	}
}

// TestNearest: the nearest name in any letter case.
func TestNearest(t *testing.T) {
	names := []string{"invoice.paid", "invoice.voided", "order.placed"}
	for in, want := range map[string]string{"Invoice.Paid": "invoice.paid", "invoice.voidd": "invoice.voided", "order": "order.placed"} {
		if got := eventtype.Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q; want %q", in, got, want)
		}
	}
	if got := eventtype.Nearest("x", nil); got != "" {
		t.Errorf("Nearest in an empty catalog = %q", got)
	}
}

// counted reads herald_schema_violations_total{type} from reg.
func counted(t *testing.T, reg *prometheus.Registry, typ string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_schema_violations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == typ {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestStoredErrors: what an event keeps of its violations is a JSON array
// of them, nil for none; a long message or pointer is cut (ending in "…",
// whole runes); past eventtype.MaxStoredErrorBytes the rest is left out and a last
// entry with the keyword "truncated" says how many.
func TestStoredErrors(t *testing.T) {
	if got := eventtype.StoredErrors(nil); got != nil {
		t.Fatalf("eventtype.StoredErrors(nil) = %q; want nil", got)
	}
	one := []eventtype.Violation{{Pointer: "/amount", Keyword: "minimum", Message: "minimum: got -5, want 0"}}
	if got := string(eventtype.StoredErrors(one)); got != `[{"pointer":"/amount","keyword":"minimum","message":"minimum: got -5, want 0"}]` {
		t.Fatalf("one violation stored as %s", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	var many []eventtype.Violation
	for i := range eventtype.MaxViolations {
		many = append(many, eventtype.Violation{Pointer: "/" + long, Keyword: "enum", Message: fmt.Sprint(i, long)})
	}
	raw := eventtype.StoredErrors(many)
	var got []eventtype.Violation
	if err := json.Unmarshal(raw, &got); err != nil || len(raw) > eventtype.MaxStoredErrorBytes {
		t.Fatalf("StoredErrors of %d long violations: %d bytes, %v; want JSON of at most %d", len(many), len(raw), err, eventtype.MaxStoredErrorBytes)
	}
	last := got[len(got)-1]
	kept := len(got) - 1
	if kept < 1 || last.Keyword != eventtype.KeywordTruncated || !strings.HasPrefix(last.Message, fmt.Sprint(eventtype.MaxViolations-kept, " more")) {
		t.Fatalf("the last stored entry of %d: %+v; want the truncated marker saying %d more", len(got), last, eventtype.MaxViolations-kept)
	}
	for _, v := range got[:kept] {
		if len(v.Message) > 512 || len(v.Pointer) > 256 || !strings.HasSuffix(v.Message, "…") || !utf8.ValidString(v.Message) || !utf8.ValidString(v.Pointer) {
			t.Fatalf("a stored violation not cut to whole runes within the bounds: %d-byte pointer, %d-byte message", len(v.Pointer), len(v.Message))
		}
	}
}

// asRefusal returns err, a Catalog.Check's, as the *Refusal it must be
// (nil for nil).
func asRefusal(t *testing.T, err error) *eventtype.Refusal {
	t.Helper()
	if err == nil {
		return nil
	}
	var r *eventtype.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("%v: want a *Refusal", err)
	}
	return r
}
