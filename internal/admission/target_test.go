package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/store"
)

// TestPublishToOneSubscription: PublishTo makes one delivery, for its
// subscription alone, though another subscription matches the event; it
// finds a subscription created behind the catalog's back; it refuses
// another account's and one deleted behind the catalog's back
// (ErrNoSubscription), storing nothing for either.
func TestPublishToOneSubscription(t *testing.T) {
	ctx := context.Background()
	st, cat, in, create := setup(t)
	deliveriesOf := func(sub string) []string {
		ds, _, err := st.ListDeliveries(ctx, store.DeliveryFilter{SubscriptionID: sub})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return ids
	}
	ev := func(id string) event.Event {
		return event.Event{SpecVersion: "1.0", ID: id, Source: admission.TestSource, Type: "t"}
	}
	create("sub_a")
	create("sub_b") // matches type t too
	if cat.Get("sub_a") != nil {
		t.Fatal("the test needs a catalog that has not seen sub_a")
	}
	res, err := in.PublishTo(ctx, "", "sub_a", ev("e1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := deliveriesOf("sub_a"); res.Duplicate || res.Deliveries != 1 || res.Queued || len(got) != 1 || got[0] != res.DeliveryID {
		t.Fatalf("PublishTo: %+v; sub_a's deliveries %v", res, got)
	}
	if got := deliveriesOf("sub_b"); len(got) != 0 {
		t.Fatalf("sub_b, which PublishTo did not name, has deliveries %v", got)
	}

	if _, err := in.PublishTo(ctx, "acc_other", "sub_a", ev("e2")); !errors.Is(err, admission.ErrNoSubscription) {
		t.Fatalf("another account's subscription: %v, want ErrNoSubscription", err)
	}
	if err := st.DeleteSubscription(ctx, "sub_a", time.Now()); err != nil {
		t.Fatal(err)
	}
	if cat.Get("sub_a") == nil {
		t.Fatal("the test needs a catalog that still has sub_a")
	}
	if _, err := in.PublishTo(ctx, "", "sub_a", ev("e3")); !errors.Is(err, admission.ErrNoSubscription) {
		t.Fatalf("a subscription deleted behind the catalog's back: %v, want ErrNoSubscription", err)
	}
	// Neither refusal stored its event: both publish anew now.
	for _, id := range []string{"e2", "e3"} {
		r, err := in.Publish(ctx, "", []event.Event{ev(id)})
		if err != nil || r[0].Duplicate {
			t.Fatalf("%s published after its refusal: %+v %v; want a new event", id, r, err)
		}
	}
}
