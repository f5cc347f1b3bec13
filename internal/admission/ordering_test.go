package admission_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/pipeline"
	"github.com/herald-events/herald/internal/store"
)

// capture is a Store that keeps what Publish was asked to write.
type capture struct {
	admission.Store
	got []store.NewEvent
}

func (c *capture) Publish(ctx context.Context, evs []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error) {
	c.got = append(c.got, evs...)
	return c.Store.Publish(ctx, evs, opts)
}

// TestKeyedDeliveriesSkipTheFastPath: an event with a partitionkey gives
// a subscription ordering by key a delivery with that ordering key, never
// written leased (held from memory), while an unordered subscription's
// delivery of it, and every delivery of an event without a key, takes the
// fast path.
func TestKeyedDeliveriesSkipTheFastPath(t *testing.T) {
	st, cat, _, create := setup(t)
	create("sub_plain")
	create("sub_ordered")
	sub, err := st.GetSubscription(context.Background(), "sub_ordered")
	if err != nil {
		t.Fatal(err)
	}
	sub.Delivery.Ordering = "key"
	if err := st.UpdateSubscription(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	if err := cat.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := &capture{Store: st}
	pipe := pipeline.New(pipeline.Config{Store: st, Catalog: cat})
	if err := pipe.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pipe.Stop)
	pub := &admission.Publisher{Store: c, Catalog: cat, Scheduler: pipe.Scheduler, Clock: clock.Real{}}
	// Until the scheduler knows the endpoints' health it grants no place:
	// publish pairs until the unkeyed one takes the fast path.
	for n := 0; ; n++ {
		if n == 1000 {
			t.Fatal("no delivery ever took the fast path")
		}
		c.got = nil
		keyed := event.Event{SpecVersion: "1.0", ID: fmt.Sprintf("k%d", n), Source: "/s", Type: "t", Extensions: map[string]any{"partitionkey": "order-7"}}
		plain := event.Event{SpecVersion: "1.0", ID: fmt.Sprintf("p%d", n), Source: "/s", Type: "t"}
		if _, err := pub.Publish(context.Background(), "", []event.Event{keyed, plain}); err != nil {
			t.Fatal(err)
		}
		if len(c.got) != 2 || c.got[0].PartitionKey != "order-7" || c.got[1].PartitionKey != "" {
			t.Fatalf("published %+v", c.got)
		}
		fast := 0
		for i, ne := range c.got {
			for _, d := range ne.Deliveries {
				wantKey := ""
				if i == 0 && d.SubscriptionID == "sub_ordered" {
					wantKey = "order-7"
				}
				if d.OrderingKey != wantKey || d.Claimed && wantKey != "" {
					t.Fatalf("event %s, %s: ordering key %q, claimed %v; want key %q, not claimed when keyed",
						ne.ID, d.SubscriptionID, d.OrderingKey, d.Claimed, wantKey)
				}
				if d.Claimed {
					fast++
				}
			}
		}
		if fast == 3 { // every unkeyed delivery held: the fast path was open
			return
		}
		runtime.Gosched() // let the health sync read the endpoints
	}
}
