package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// testPublishSchemaErrors: an event's schema errors (NewEvent.SchemaErrors)
// are stored with it and read back by GetEvent and the dead-letter list,
// byte for byte; an event without them reads none (nil), also in a call
// and a batch where another event has some; a duplicate keeps the errors
// of the event stored first.
func testPublishSchemaErrors(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	errs := []byte(`[{"pointer":"/amount","keyword":"minimum","message":"must be >= 0 but found -1"}]`)
	clean := b.event(b.now, a)
	bad := b.event(b.at(time.Second), a)
	bad.SchemaErrors = errs
	res := b.publish(clean, bad, b.event(b.at(2*time.Second)))
	for i, want := range [][]byte{nil, errs, nil} {
		got, err := b.s.GetEvent(b.ctx, res[i].Seq)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.SchemaErrors) != string(want) || (want == nil) != (got.SchemaErrors == nil) {
			t.Errorf("event %d's schema errors read back %q; want %q", i, got.SchemaErrors, want)
		}
	}
	again := bad
	again.SchemaErrors = []byte(`[{"pointer":"","keyword":"type","message":"other"}]`)
	again.Deliveries = nil
	if r := b.publish(again)[0]; !r.Duplicate {
		t.Fatalf("the same event again: %+v; want a duplicate", r)
	}
	if got, _ := b.s.GetEvent(b.ctx, res[1].Seq); string(got.SchemaErrors) != string(errs) {
		t.Errorf("after a duplicate, the schema errors read %q; want the first's %q", got.SchemaErrors, errs)
	}

	// A dead letter shows its event's schema errors.
	dl := b.event(b.at(3*time.Second), a)
	dl.SchemaErrors = errs
	dl.Deliveries[0].Claimed = true
	seq := b.publish(dl)[0].Seq
	b.record(deadLettered(dl.Deliveries[0].ID, 1, b.at(3*time.Second), b.at(3*time.Second)))
	dls, _, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: a.ID})
	if err != nil || len(dls) != 1 || dls[0].Event.Seq != seq {
		t.Fatalf("ListDeadLetters = %+v, %v; want the one dead letter", dls, err)
	}
	if string(dls[0].Event.SchemaErrors) != string(errs) {
		t.Errorf("the dead letter's event has schema errors %q; want %q", dls[0].Event.SchemaErrors, errs)
	}
}
