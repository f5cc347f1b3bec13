package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// CheckKeyLeasesExclusive: keyRacersPerNode claimers on each of nodes (stores
// sharing one database: several nodes) work at once, keyRaceRounds rounds
// each, on the deliveries of keyRaceKeys ordering keys of one subscription.
// Each round a claimer claims, ends each delivery it got (delivered, failed
// with a retry due at once, or given back with Release) and redelivers one
// delivery, which makes an earlier event of its key pending again while
// the others claim. No claim may return a delivery of a key while another
// delivery of that key is held (claimed and not yet ended) by any claimer:
// at most one delivery of a key in flight (docs/ordering.md).
func CheckKeyLeasesExclusive(t *testing.T, nodes ...store.Store) {
	t.Helper()
	sub := claimersSubscription(t, nodes[0])
	all := publishKeyRace(t, nodes[0], sub)
	now := base.Add(time.Hour)
	takeAll(t, nodes, keyRacersPerNode, "racer", func(s store.Store, me string, c int, h *holders) error {
		return raceKeys(s, sub.EndpointID, all, now, me, c, h)
	})
}

// CheckKeyLeasesExclusive's sizes: keys, events a key, claimers a store,
// rounds a claimer.
const keyRaceKeys, keyRaceEvents, keyRacersPerNode, keyRaceRounds = 3, 4, 4, 250

// publishKeyRace publishes keyRaceEvents events for each of keyRaceKeys keys
// to sub, keys interleaved, and returns their deliveries' IDs.
func publishKeyRace(t *testing.T, s store.Store, sub subscription.Subscription) []string {
	t.Helper()
	var evs []store.NewEvent
	var all []string
	for i := range keyRaceKeys * keyRaceEvents {
		id, key := ids.New("dlv_", base), fmt.Sprintf("key-%d", i%keyRaceKeys)
		all = append(all, id)
		evs = append(evs, store.NewEvent{ID: fmt.Sprintf("%s-race-%d", sub.ID, i), Source: "/race", Type: "x",
			Payload: []byte(`{}`), PublishedAt: base, PartitionKey: key,
			Deliveries: []store.NewDelivery{{ID: id, SubscriptionID: sub.ID, EndpointID: sub.EndpointID, OrderingKey: key}}})
	}
	if _, err := s.Publish(context.Background(), evs, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	return all
}

// raceKeys is one claimer, me (the c-th of its store), of
// CheckKeyLeasesExclusive: h holds, by ordering key, the delivery a
// claimer holds. A delivery leaves h before the call that ends it, so a
// claim may only find its key free once that call has committed.
func raceKeys(s store.Store, ep string, all []string, now time.Time, me string, c int, h *holders) error {
	ctx := context.Background()
	lease := store.Lease{Owner: me, Until: base.Add(10000 * time.Hour)}
	for round := range keyRaceRounds {
		got, err := s.ClaimDue(ctx, ep, now, 10, lease)
		if err != nil {
			return err
		}
		if err := h.holdKeys(me, got); err != nil {
			return err
		}
		for i, d := range got {
			h.endKey(d.OrderingKey)
			if err := endRaced(ctx, s, d.Delivery, now, me, round+i+c); err != nil {
				return err
			}
		}
		id := all[(round*7+c*5)%len(all)]
		if _, err := s.Redeliver(ctx, id, now); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%s: redeliver %s: %w", me, id, err)
		}
	}
	return nil
}

// endRaced ends d, held by me: delivered, failed with a retry due at now,
// or given back, as n (mod 3) says.
func endRaced(ctx context.Context, s store.Store, d delivery.Delivery, now time.Time, me string, n int) error {
	if n%3 == 2 {
		return s.Release(ctx, []string{d.ID}, me)
	}
	o := store.Outcome{Attempt: delivery.Attempt{DeliveryID: d.ID, Number: d.Attempts + 1, StartedAt: now, StatusCode: 200, Outcome: "http_200"},
		Status: delivery.StatusDelivered, Attempts: d.Attempts + 1, RoundAttempts: d.RoundAttempts + 1, DeliveredAt: now, LeaseOwner: me}
	if n%3 == 1 {
		o.Attempt.StatusCode, o.Attempt.Outcome = 503, "http_503"
		o.Status, o.DeliveredAt, o.FirstFailure, o.NextAttemptAt = delivery.StatusPending, time.Time{}, now, now
	}
	_, err := s.Record(ctx, []store.Outcome{o})
	return err
}

// holdKeys records that me holds each delivery of got by its ordering key;
// it fails when another delivery of one of those keys is held.
func (h *holders) holdKeys(me string, got []store.Claimed) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range got {
		if other, ok := h.m[c.OrderingKey]; ok {
			return fmt.Errorf("%s claimed %s of key %s while %s", me, c.ID, c.OrderingKey, other)
		}
		h.m[c.OrderingKey] = me + " holds " + c.ID
	}
	return nil
}

// endKey records that the delivery held by key ends.
func (h *holders) endKey(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}
