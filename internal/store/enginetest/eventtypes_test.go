package enginetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
)

// RunEventTypesContract checks the event-type catalog
// (store.EventTypeStore, read by eventtype.Catalog and written by
// control.EventTypes): types as written, the list's pages, groups and
// archived types, the names and the limit, the revisions that keep a
// published version from being overwritten, and the version every write
// advances.
func RunEventTypesContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"EventTypes", []test{
			{"CreateGetAll", testEventTypeCreateGet},
			{"ListPagesGroupsArchived", testEventTypeList},
			{"NameTakenAndLimit", testEventTypeLimit},
			{"UpdateRevisions", testEventTypeUpdate},
			{"CatalogBytes", testEventTypeBytes},
		}},
	})
}

// newEventType is a type named name in group with one schema version and
// an example, at b.now.
func newEventType(b *bundle, name, group string) eventtype.EventType {
	return eventtype.EventType{Name: name, Description: "the " + name + " <event> & more", Group: group,
		Schemas:  map[int]json.RawMessage{1: json.RawMessage(`{"type":"object","description":"<b>&</b>","required":["id"]}`)},
		Examples: []json.RawMessage{json.RawMessage(`{"id":"x1"}`)}, CreatedAt: b.now, UpdatedAt: b.now, Revision: 1}
}

func createEventType(b *bundle, t eventtype.EventType) {
	b.t.Helper()
	if err := b.s.CreateEventType(b.ctx, t, 0); err != nil {
		b.t.Fatalf("CreateEventType(%s): %v", t.Name, err)
	}
}

func eventTypesVersion(b *bundle) int64 {
	b.t.Helper()
	v, err := b.s.EventTypesVersion(b.ctx)
	if err != nil {
		b.t.Fatalf("EventTypesVersion: %v", err)
	}
	return v
}

// testEventTypeCreateGet: a type reads back as written, byte for byte in
// its schemas (HTML characters unescaped); an unknown name is
// ErrNotFound; AllEventTypes holds every type, archived ones too, in name
// order; each write advances the version.
func testEventTypeCreateGet(t *testing.T, b *bundle) {
	v0 := eventTypesVersion(b)
	paid := newEventType(b, "invoice.paid", "billing")
	paid.Schemas[2] = json.RawMessage(`{"type":"object"}`)
	paid.Deprecated = true
	createEventType(b, paid)
	got, err := b.s.GetEventType(b.ctx, "invoice.paid")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "GetEventType", got, paid)
	if _, err := b.s.GetEventType(b.ctx, "invoice.Paid"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEventType of another letter case: %v; want ErrNotFound (names are case-sensitive)", err)
	}
	old := newEventType(b, "a.old", "")
	old.ArchivedAt = b.at(time.Second)
	createEventType(b, old)
	all, err := b.s.AllEventTypes(b.ctx)
	if err != nil || len(all) != 2 || all[0].Name != "a.old" || !all[0].Archived() || all[1].Name != "invoice.paid" {
		t.Fatalf("AllEventTypes = %+v, %v; want a.old (archived), invoice.paid", all, err)
	}
	if v := eventTypesVersion(b); v != v0+2 {
		t.Fatalf("the version after two creates: %d; want %d", v, v0+2)
	}
}

// testEventTypeList: the list pages in name order, by group, with or
// without the archived types; a cursor that is not a name is refused.
func testEventTypeList(t *testing.T, b *bundle) {
	for _, n := range []struct{ name, group string }{{"c.one", "g1"}, {"a.two", "g2"}, {"b.three", "g1"}, {"d.four", ""}} {
		createEventType(b, newEventType(b, n.name, n.group))
	}
	arch := newEventType(b, "b.archived", "g1")
	arch.ArchivedAt = b.now
	createEventType(b, arch)
	list := func(f store.EventTypeFilter, limit int) []string {
		return pageIDs(t, limit, func(p store.Page) ([]eventtype.EventType, string, error) { return b.s.ListEventTypes(b.ctx, f, p) },
			func(et eventtype.EventType) string { return et.Name })
	}
	equal(t, "every type", list(store.EventTypeFilter{}, 2), []string{"a.two", "b.three", "c.one", "d.four"})
	equal(t, "with archived", list(store.EventTypeFilter{IncludeArchived: true}, 1),
		[]string{"a.two", "b.archived", "b.three", "c.one", "d.four"})
	equal(t, "group g1", list(store.EventTypeFilter{Group: "g1"}, 1), []string{"b.three", "c.one"})
	equal(t, "group g1 with archived", list(store.EventTypeFilter{Group: "g1", IncludeArchived: true}, 10),
		[]string{"b.archived", "b.three", "c.one"})
	equal(t, "group none", list(store.EventTypeFilter{Group: "nope"}, 10), []string{})
	if _, _, err := b.s.ListEventTypes(b.ctx, store.EventTypeFilter{}, store.Page{Cursor: "\xff"}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Fatalf("a cursor that is not UTF-8: %v; want ErrInvalidCursor", err)
	}
}

// testEventTypeLimit: a name taken (archived or not) is ErrNameTaken; past
// the limit a create is an *EventTypeLimitError; neither writes anything
// nor advances the version.
func testEventTypeLimit(t *testing.T, b *bundle) {
	createEventType(b, newEventType(b, "one", ""))
	v := eventTypesVersion(b)
	if err := b.s.CreateEventType(b.ctx, newEventType(b, "one", "other"), 5); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a second type named one: %v; want ErrNameTaken", err)
	}
	createEventType(b, newEventType(b, "two", ""))
	var le *store.EventTypeLimitError
	if err := b.s.CreateEventType(b.ctx, newEventType(b, "three", ""), 2); !errors.As(err, &le) || le.Limit != 2 || !errors.Is(err, store.ErrEventTypeLimit) {
		t.Fatalf("a third type with a limit of 2: %v; want an EventTypeLimitError of 2", err)
	}
	if _, err := b.s.GetEventType(b.ctx, "three"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused type: %v; want ErrNotFound", err)
	}
	if got := eventTypesVersion(b); got != v+1 {
		t.Fatalf("the version after one create and two refusals: %d; want %d", got, v+1)
	}
}

// bigEventType is a type named name whose description is size bytes.
func bigEventType(b *bundle, name string, size int) eventtype.EventType {
	t := newEventType(b, name, "")
	t.Description = strings.Repeat("d", size)
	return t
}

// testEventTypeBytes: a create or an update that would make the types
// take more than eventtype.MaxCatalogBytes together is an
// EventTypeLimitError naming the bytes and writes nothing; an update that
// keeps a type's size, or shrinks it, is written.
func testEventTypeBytes(t *testing.T, b *bundle) {
	const quarter = eventtype.MaxCatalogBytes / 4
	for _, n := range []string{"a", "b", "c"} {
		createEventType(b, bigEventType(b, n, quarter))
	}
	v := eventTypesVersion(b)
	var le *store.EventTypeLimitError
	if err := b.s.CreateEventType(b.ctx, bigEventType(b, "d", quarter), 0); !errors.As(err, &le) || le.Bytes != eventtype.MaxCatalogBytes {
		t.Fatalf("a type past the catalog's bytes: %v; want an EventTypeLimitError of %d bytes", err, eventtype.MaxCatalogBytes)
	}
	grown := bigEventType(b, "c", 2*quarter+quarter/2)
	grown.Revision = 2
	if err := b.s.UpdateEventType(b.ctx, grown); !errors.As(err, &le) || le.Bytes == 0 {
		t.Fatalf("a type grown past the catalog's bytes: %v; want an EventTypeLimitError", err)
	}
	if got := eventTypesVersion(b); got != v {
		t.Fatalf("the version after two refusals: %d; want %d", got, v)
	}
	same := bigEventType(b, "c", quarter)
	same.Revision = 2
	if err := b.s.UpdateEventType(b.ctx, same); err != nil {
		t.Fatalf("an update that keeps the type's size: %v", err)
	}
	createEventType(b, bigEventType(b, "small", 1000))
}

// testEventTypeUpdate: an update written at the next revision replaces the
// type (not its created time); one of a revision already passed is
// ErrConflict and changes nothing; an unknown name is ErrNotFound.
func testEventTypeUpdate(t *testing.T, b *bundle) {
	orig := newEventType(b, "order.shipped", "orders")
	createEventType(b, orig)
	next := orig
	next.Schemas = map[int]json.RawMessage{1: orig.Schemas[1], 2: json.RawMessage(`{"type":"object","required":["id","carrier"]}`)}
	next.Examples, next.Group, next.Description = nil, "", "shipped"
	next.ArchivedAt, next.UpdatedAt, next.Revision = b.at(5*time.Second), b.at(5*time.Second), 2
	if err := b.s.UpdateEventType(b.ctx, next); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.GetEventType(b.ctx, "order.shipped")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "the type after the update", got, next)
	stale := orig
	stale.Schemas = map[int]json.RawMessage{1: orig.Schemas[1], 2: json.RawMessage(`{"type":"string"}`)}
	stale.Revision = 2
	if err := b.s.UpdateEventType(b.ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an update from revision 1 after revision 2: %v; want ErrConflict", err)
	}
	if got, _ := b.s.GetEventType(b.ctx, "order.shipped"); string(got.Schemas[2]) != string(next.Schemas[2]) {
		t.Fatalf("version 2 after the refused update: %s; want %s", got.Schemas[2], next.Schemas[2])
	}
	missing := newEventType(b, "nope", "")
	missing.Revision = 2
	if err := b.s.UpdateEventType(b.ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an update of an unknown type: %v; want ErrNotFound", err)
	}
}
