package enginetest

import (
	"encoding/json"
	"testing"

	"github.com/herald-events/herald/internal/store"
)

// EventTypesFrom is the schema version before the one that added the
// event-type catalog (0022_event_types.sql on both stores): RunUpgrades
// opens EventTypesData written at it.
const EventTypesFrom = 21

// EventTypesData is written into a database at schema version
// EventTypesFrom: OpenDeliveriesData, whose account acc_…sess has settings
// written before the catalog's (no schema_validation, no catalog_only).
const EventTypesData = OpenDeliveriesData

// CheckEventTypesUpgrade checks a store opened on a database at
// EventTypesFrom holding EventTypesData: the catalog is empty at a
// version of its own, takes a type (which lists, reads back and advances
// the version), and the data written before is still there.
func CheckEventTypesUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	v, err := s.EventTypesVersion(b.ctx)
	if err != nil || v < 1 {
		t.Fatalf("EventTypesVersion after the upgrade = %d, %v; want a version", v, err)
	}
	if all, err := s.AllEventTypes(b.ctx); err != nil || len(all) != 0 {
		t.Fatalf("AllEventTypes after the upgrade = %+v, %v; want none", all, err)
	}
	et := newEventType(b, "invoice.paid", "billing")
	et.Schemas[2] = json.RawMessage(`{"type":"object"}`)
	createEventType(b, et)
	got, err := s.GetEventType(b.ctx, et.Name)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "the type created after the upgrade", got, et)
	page, _, err := s.ListEventTypes(b.ctx, store.EventTypeFilter{Group: "billing"}, store.Page{})
	if err != nil || len(page) != 1 || page[0].Name != et.Name {
		t.Fatalf("ListEventTypes after the upgrade = %+v, %v; want invoice.paid", page, err)
	}
	if got := eventTypesVersion(b); got != v+1 {
		t.Fatalf("the version after a create: %d; want %d", got, v+1)
	}
	if d, err := s.GetDelivery(b.ctx, "dlv_v20_fresh"); err != nil || d.AccountID != "acc_000000000000000000000sess" {
		t.Fatalf("a delivery written at schema 21, after the upgrade: %+v, %v", d, err)
	}
}
