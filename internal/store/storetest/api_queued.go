package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// testListQueuedByEndpoint: ListDeliveries with an endpoint and the queued
// status lists that endpoint's queued deliveries, newest first, in pages.
func testListQueuedByEndpoint(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	other := b.account("other")
	oa := b.subIn(other.ID, a.URL) // the same URL in another account: another endpoint
	var queued []string
	for i := range 5 {
		queued = append(queued, b.queue(a, b.at(time.Duration(i)*time.Second)))
	}
	b.queue(c, b.now)
	b.queue(oa, b.now)
	b.deliver(a, b.now)
	for _, f := range []store.DeliveryFilter{
		{AccountID: store.DefaultAccount, EndpointID: a.EndpointID, Status: store.StatusQueued},
		{EndpointID: a.EndpointID, Status: store.StatusQueued},
		{AccountID: store.DefaultAccount, SubscriptionID: a.ID, EndpointID: a.EndpointID, Status: store.StatusQueued},
	} {
		for _, limit := range []int{1, 2, 5, 6} {
			got := allPages(t, limit, func(p store.Page) ([]string, string, error) {
				f.Page = p
				ds, next, err := b.s.ListDeliveries(b.ctx, f)
				for _, d := range ds {
					if d.Status != store.StatusQueued || d.EndpointID != a.EndpointID {
						t.Fatalf("listed %+v", d)
					}
				}
				return deliveryIDs(ds), next, err
			})
			equal(t, fmt.Sprintf("queued of %s by %+v, limit %d", a.EndpointID, f, limit), got, reversed(queued))
		}
	}
	// Another account's view of the endpoint is empty.
	ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{AccountID: other.ID, EndpointID: a.EndpointID, Status: store.StatusQueued})
	if err != nil || len(ds) != 0 {
		t.Fatalf("another account's list = %v, %v; want none", deliveryIDs(ds), err)
	}
	// A settled delivery leaves the list.
	res := receive(b, a, b.at(time.Hour), 1)
	settled(t, "acknowledge", settle(b, a, store.Acknowledge, b.at(time.Hour), res.Received[0].LockToken), nil)
	ds, _, err = b.s.ListDeliveries(b.ctx, store.DeliveryFilter{EndpointID: a.EndpointID, Status: store.StatusQueued})
	if err != nil || len(ds) != 4 {
		t.Fatalf("after an acknowledgement: %v, %v; want 4", deliveryIDs(ds), err)
	}
}
