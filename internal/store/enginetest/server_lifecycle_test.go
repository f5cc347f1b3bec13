package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func testClosed(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	id := b.deliver(a, b.now)
	if err := b.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := map[string]error{}
	_, calls["Publish"] = b.s.Publish(b.ctx, []store.NewEvent{b.event(b.now, a)}, store.PublishOptions{Lease: b.lease})
	_, calls["Record"] = b.s.Record(b.ctx, []store.Outcome{succeeded(id, 1, b.now)})
	_, calls["ClaimDue"] = b.s.ClaimDue(b.ctx, a.EndpointID, b.now, 10, b.lease)
	calls["Release"] = b.s.Release(b.ctx, []string{id}, b.lease.Owner)
	_, calls["ExtendLeases"] = b.s.ExtendLeases(b.ctx, []string{id}, b.lease)
	_, calls["TryLead"] = b.s.TryLead(b.ctx, "cleanup", b.lease.Owner, b.now, b.at(time.Minute))
	_, calls["ModifyEndpoints"] = b.s.ModifyEndpoints(b.ctx, []string{a.EndpointID}, func([]*endpoint.Endpoint) error { return nil })
	_, calls["TakeProbe"] = b.s.TakeProbe(b.ctx, a.EndpointID, b.now, b.at(time.Minute))
	_, calls["GetDelivery"] = b.s.GetDelivery(b.ctx, id)
	_, _, calls["ListDeliveries"] = b.s.ListDeliveries(b.ctx, store.DeliveryFilter{})
	_, calls["DueEndpoints"] = b.s.DueEndpoints(b.ctx)
	_, _, calls["NextDue"] = b.s.NextDue(b.ctx, a.EndpointID)
	_, _, calls["CountPending"] = b.s.CountPending(b.ctx)
	_, calls["GetSubscription"] = b.s.GetSubscription(b.ctx, a.ID)
	calls["CreateSubscription"] = b.s.CreateSubscription(b.ctx, subscription.Subscription{ID: "sub_x", Name: "x", URL: "https://x/"})
	calls["DeleteSubscription"] = b.s.DeleteSubscription(b.ctx, a.ID, b.now)
	_, calls["Redeliver"] = b.s.Redeliver(b.ctx, id, b.now)
	_, calls["Cleanup"] = b.s.Cleanup(b.ctx, b.now, 10)
	calls["Ping"] = b.s.Ping(b.ctx)
	calls["CreateAccount"] = b.s.CreateAccount(b.ctx, account.Account{ID: "acc_x", Name: "x"})
	_, calls["GetAccount"] = b.s.GetAccount(b.ctx, account.DefaultID)
	calls["DeleteAccount"] = b.s.DeleteAccount(b.ctx, "acc_x")
	_, calls["CreateFirstKey"] = b.s.CreateFirstKey(b.ctx, account.Key{ID: "key_x", Hash: []byte("x")})
	_, calls["KeyByHash"] = b.s.KeyByHash(b.ctx, []byte("x"))
	_, calls["AuthVersion"] = b.s.AuthVersion(b.ctx)
	_, calls["Receive"] = b.s.Receive(b.ctx, store.ReceiveRequest{SubscriptionID: a.ID, Now: b.now, Max: 1, LockFor: time.Minute})
	_, calls["Settle"] = b.s.Settle(b.ctx, store.SettleRequest{SubscriptionID: a.ID, Action: store.Acknowledge,
		Tokens: []string{store.LockToken(id, "x")}, Now: b.now})
	_, calls["ReactivateSubscription"] = b.s.ReactivateSubscription(b.ctx, a.ID, b.now, subscription.ReasonReactivatedByHand)
	_, calls["DeactivateSubscription"] = b.s.DeactivateSubscription(b.ctx, a.ID, b.now, subscription.ReasonDeactivatedByHand)
	_, calls["CountQueued"] = b.s.CountQueued(b.ctx)
	_, calls["CountBacklog"] = b.s.CountBacklog(b.ctx, 10)
	for name, err := range calls {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if err := b.s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}
