package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// SchemaErrorsFrom is the schema version before the one that keeps an
// event's schema errors (0023_schema_errors.sql on both stores):
// RunUpgrades opens SchemaErrorsData written at it.
const SchemaErrorsFrom = 22

// SchemaErrorsData is written into a database at schema version
// SchemaErrorsFrom: OpenDeliveriesData (its events e20a…e20g, e20f's
// delivery dead-lettered), and an event type.
const SchemaErrorsData = OpenDeliveriesData + `
INSERT INTO event_types (name, description, grp, schemas, examples, deprecated, archived_at, created_at, updated_at, revision)
VALUES ('invoice.paid', '', 'billing', '{"1":{"type":"object"}}', '[]', false, 0, 1767603600000, 1767603600000, 1);
`

// CheckSchemaErrorsUpgrade checks a store opened on a database at
// SchemaErrorsFrom holding SchemaErrorsData: the events written before
// read no schema errors (GetEvent, the dead-letter list), an event
// published after the upgrade keeps its own, and the catalog is kept.
func CheckSchemaErrorsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	d, err := s.GetDelivery(b.ctx, "dlv_v20_dead")
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := s.GetEvent(b.ctx, d.EventSeq); err != nil || ev.ID != "e20f" || ev.SchemaErrors != nil {
		t.Fatalf("an event written at schema 22, after the upgrade: %+v, %v; want e20f without schema errors", ev, err)
	}
	dls, _, err := s.ListDeadLetters(b.ctx, store.DeadLetterFilter{AccountID: "acc_000000000000000000000sess"})
	if err != nil || len(dls) != 1 || dls[0].Event.ID != "e20f" || dls[0].Event.SchemaErrors != nil {
		t.Fatalf("the dead letters after the upgrade: %+v, %v; want e20f's, without schema errors", dls, err)
	}
	ev := b.event(b.at(time.Second))
	ev.SchemaErrors = []byte(`[{"pointer":"","keyword":"required","message":"missing property 'id'"}]`)
	seq := b.publish(ev)[0].Seq
	if got, err := s.GetEvent(b.ctx, seq); err != nil || string(got.SchemaErrors) != string(ev.SchemaErrors) {
		t.Fatalf("an event published after the upgrade: %+v, %v; want its schema errors %s", got, err, ev.SchemaErrors)
	}
	if et, err := s.GetEventType(b.ctx, "invoice.paid"); err != nil || et.Group != "billing" {
		t.Fatalf("the event type written at schema 22: %+v, %v", et, err)
	}
}
