package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/client"
)

// TestSubscriptionActions drives the subscription actions through a real
// server: update, secret and rotation, deactivate and reactivate, a test
// event, filter-test, stats and a portal link.
func TestSubscriptionActions(t *testing.T) {
	ctx := context.Background()
	base, rc := startServer(t), newReceiver(t)
	c := newClient(t, base, adminKey)
	sub, err := c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "push", URL: rc.URL + "/ok", EventTypes: []string{"a"}})
	check(t, "Subscriptions.Create", err)
	up, err := c.Subscriptions.Update(ctx, sub.ID, client.SubscriptionUpdate{EventTypes: &[]string{"a", "b"}, Timeout: new(client.Duration(5 * time.Second))})
	check(t, "Subscriptions.Update", err)
	if len(up.EventTypes) != 2 || up.Timeout != client.Duration(5*time.Second) || up.Name != "push" {
		t.Errorf("Subscriptions.Update: %+v", up)
	}
	sec, err := c.Subscriptions.Secret(ctx, sub.ID)
	check(t, "Subscriptions.Secret", err)
	if sec.Algorithm != "hmac-sha256" || !strings.HasPrefix(sec.Secret, "whsec_") || len(sec.Previous) != 0 {
		t.Errorf("Subscriptions.Secret: %+v", sec)
	}
	rot, err := c.Subscriptions.RotateSecret(ctx, sub.ID, client.RotateSecretParams{Grace: new(client.Duration(time.Hour))})
	check(t, "Subscriptions.RotateSecret", err)
	if rot.Secret == sec.Secret || len(rot.Previous) != 1 || rot.Previous[0].Secret != sec.Secret {
		t.Errorf("Subscriptions.RotateSecret: %+v, want the old secret previous", rot)
	}
	off, err := c.Subscriptions.Deactivate(ctx, sub.ID)
	check(t, "Subscriptions.Deactivate", err)
	if off.State != "deactivated" || off.StateReason == nil || *off.StateReason != "deactivated by hand" {
		t.Errorf("Subscriptions.Deactivate: %+v", off)
	}
	on, err := c.Subscriptions.Reactivate(ctx, sub.ID)
	check(t, "Subscriptions.Reactivate", err)
	if on.State != "active" || on.ID != sub.ID || on.Requeued != 0 {
		t.Errorf("Subscriptions.Reactivate: %+v", on)
	}
	test, err := c.Subscriptions.Test(ctx, sub.ID, client.TestEventParams{Data: map[string]any{"hello": "world"}})
	check(t, "Subscriptions.Test", err)
	if test.EventID == "" || test.DeliveryID == "" || test.Queued {
		t.Errorf("Subscriptions.Test: %+v", test)
	}
	filterTests(t, ctx, c, sub.ID)
	stats, err := c.Stats.Get(ctx, client.StatsParams{Window: "1h", SubscriptionID: sub.ID})
	check(t, "Stats.Get", err)
	if stats.Step != "1m0s" && stats.Step != "1m" || len(stats.Series) == 0 {
		t.Errorf("Stats.Get: step %q, %d points", stats.Step, len(stats.Series))
	}
	link, err := c.PortalSessions.Create(ctx, client.PortalSessionInput{SubscriptionIDs: []string{sub.ID}, TTL: "30m"})
	check(t, "PortalSessions.Create", err)
	if link.URL == "" || link.ExpiresAt.Before(time.Now().Add(29*time.Minute)) {
		t.Errorf("PortalSessions.Create: %+v", link)
	}
}

// filterTests asks whether two events would match the subscription.
func filterTests(t *testing.T, ctx context.Context, c *client.Client, sub string) {
	yes, err := c.Subscriptions.FilterTest(ctx, sub, client.Event{ID: "1", Source: "/s", Type: "b"})
	check(t, "Subscriptions.FilterTest", err)
	no, err := c.Subscriptions.FilterTest(ctx, sub, client.Event{ID: "1", Source: "/s", Type: "c"})
	check(t, "Subscriptions.FilterTest", err)
	if !yes.Matches || no.Matches || no.Reason == "" || no.FailedFilter != nil {
		t.Errorf("Subscriptions.FilterTest: type b %+v, type c %+v", yes, no)
	}
}

// TestQueue drives a pull subscription's queue through a real server: a
// binary-mode publish, the queued list, receive, renew-lock, release,
// reject and acknowledge.
func TestQueue(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, startServer(t), adminKey)
	sub, err := c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "pull", DeliveryMode: "pull"})
	check(t, "Subscriptions.Create", err)
	publishBinary := func(id string) {
		res, err := c.Events.PublishRaw(ctx, client.RawPublish{ContentType: "application/json", Body: []byte(`{"n":1}`),
			Header: http.Header{"Ce-Specversion": {"1.0"}, "Ce-Id": {id}, "Ce-Source": {"/q"}, "Ce-Type": {"job"}}})
		check(t, "Events.PublishRaw", err)
		if len(res.Events) != 1 || res.Events[0].ID != id || res.Events[0].Deliveries != 1 {
			t.Fatalf("Events.PublishRaw: %+v", res)
		}
	}
	publishBinary("q1")
	queued, err := c.Deliveries.ListQueued(ctx, client.DeliveryListParams{SubscriptionID: sub.ID})
	check(t, "Deliveries.ListQueued", err)
	if len(queued.Data) != 1 || queued.Data[0].Status != "queued" || queued.Data[0].Event == nil || string(queued.Data[0].Event.Data) != `{"n":1}` {
		t.Fatalf("Deliveries.ListQueued: %+v", queued.Data)
	}
	got := receiveOne(t, ctx, c, sub.ID, 1)
	settle(t, "RenewLock", 1)(c.Subscriptions.RenewLock(ctx, sub.ID, client.RenewLockParams{LockTokens: []string{got.LockToken}, LockDuration: new(client.Duration(time.Minute))}))
	settle(t, "Release", 1)(c.Subscriptions.Release(ctx, sub.ID, client.ReleaseParams{LockTokens: []string{got.LockToken}, Delay: client.ReleaseNow}))
	got = receiveOne(t, ctx, c, sub.ID, 2)
	settle(t, "Reject", 1)(c.Subscriptions.Reject(ctx, sub.ID, []string{got.LockToken}))
	publishBinary("q2")
	got = receiveOne(t, ctx, c, sub.ID, 1)
	settle(t, "Acknowledge", 1)(c.Subscriptions.Acknowledge(ctx, sub.ID, []string{got.LockToken}))
	settle(t, "Acknowledge again", 0)(c.Subscriptions.Acknowledge(ctx, sub.ID, []string{got.LockToken}))
	d, err := c.Deliveries.Get(ctx, got.DeliveryID)
	check(t, "Deliveries.Get", err)
	if d.Status != "delivered" {
		t.Errorf("the acknowledged delivery is %q", d.Status)
	}
}

// receiveOne receives the one queued delivery, its count wantCount.
func receiveOne(t *testing.T, ctx context.Context, c *client.Client, sub string, wantCount int) client.ReceivedDelivery {
	t.Helper()
	res, err := c.Subscriptions.Receive(ctx, sub, client.ReceiveParams{MaxEvents: 10, MaxWait: new(client.Duration(5 * time.Second))})
	check(t, "Subscriptions.Receive", err)
	if len(res.Data) != 1 || res.Data[0].DeliveryCount != wantCount || res.Data[0].LockToken == "" || res.Data[0].Event == nil {
		t.Fatalf("Subscriptions.Receive: %+v, want one delivery received %d times", res.Data, wantCount)
	}
	return res.Data[0]
}

// settle checks that a settle answer has want succeeded tokens and the
// rest failed with a reason.
func settle(t *testing.T, what string, want int) func(*client.SettleResult, error) {
	return func(r *client.SettleResult, err error) {
		t.Helper()
		check(t, what, err)
		if len(r.Succeeded) != want || len(r.Failed) != 1-want || want == 0 && r.Failed[0].Error == "" {
			t.Errorf("%s: %+v, want %d succeeded", what, r, want)
		}
	}
}

// TestValidation validates a subscription's endpoint through its public
// validation URL, with the code of the handshake its endpoint got: the
// client sends no key there.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	codes := make(chan string, 4)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var events []struct {
			Data struct{ ValidationCode string } `json:"data"`
		}
		if json.Unmarshal(body, &events) == nil && len(events) == 1 && events[0].Data.ValidationCode != "" {
			codes <- events[0].Data.ValidationCode
		}
		w.WriteHeader(http.StatusBadRequest) // the handshake is passed by the URL instead
	}))
	t.Cleanup(hs.Close)
	base := startServer(t)
	c := newClient(t, base, adminKey)
	sub, err := c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "v", URL: hs.URL, Validation: "eventgrid", DeliverySchema: "eventgrid"})
	check(t, "Subscriptions.Create", err)
	if sub.State != "awaiting_validation" {
		t.Fatalf("a subscription with validation is %q", sub.State)
	}
	var code string
	select {
	case code = <-codes:
	case <-time.After(stallBound):
		t.Fatal("no validation handshake came")
	}
	public := newClient(t, base, "not-a-key")
	var p *client.Problem
	if _, err := public.Validation.Get(ctx, sub.ID, code+"x"); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("a wrong code: %v, want 404", err)
	}
	res, err := public.Validation.Get(ctx, sub.ID, code)
	check(t, "Validation.Get", err)
	if !res.Validated {
		t.Errorf("Validation.Get: %+v", res)
	}
	after, err := c.Subscriptions.Get(ctx, sub.ID)
	check(t, "Subscriptions.Get", err)
	if after.State != "active" {
		t.Errorf("after validation the subscription is %q", after.State)
	}
}
