package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/client"
)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// world is what TestRoundTrip sets up: an account, a client with its
// account key, and a push subscription to a receiver that answers 204 and
// one to a receiver path that answers 500 (one attempt, then dead letter).
type world struct {
	admin, c *client.Client
	account  *client.Account
	key      *client.CreatedAPIKey
	ok, fail *client.Subscription
	since    time.Time
	base     string
}

// setUpWorld makes the account, its key and the two subscriptions through
// the client.
func setUpWorld(t *testing.T, ctx context.Context) *world {
	base, rc := startServer(t), newReceiver(t)
	w := &world{admin: newClient(t, base, adminKey), since: time.Now().Add(-time.Second), base: base}
	var err error
	w.account, err = w.admin.Accounts.Create(ctx, client.AccountInput{Name: "acme"})
	check(t, "Accounts.Create", err)
	got, err := w.admin.Accounts.Get(ctx, w.account.ID)
	check(t, "Accounts.Get", err)
	if got.Name != "acme" || got.Settings.FailurePolicy != "retry" {
		t.Errorf("Accounts.Get: %+v", got)
	}
	renamed, err := w.admin.Accounts.Update(ctx, w.account.ID, client.AccountUpdate{Name: new("acme-eu")})
	check(t, "Accounts.Update", err)
	if renamed.Name != "acme-eu" {
		t.Errorf("Accounts.Update: name %q", renamed.Name)
	}
	w.key, err = w.admin.Keys.Create(ctx, client.APIKeyInput{AccountID: w.account.ID, Role: "account", Name: "ops"})
	check(t, "Keys.Create", err)
	if w.key.Key == "" || w.key.AccountID != w.account.ID || w.key.Role != "account" {
		t.Fatalf("Keys.Create: %+v", w.key)
	}
	w.c = newClient(t, base, w.key.Key)
	w.ok, err = w.c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "ok", URL: rc.URL + "/ok", EventTypes: []string{"order.created"}})
	check(t, "Subscriptions.Create ok", err)
	w.fail, err = w.c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "fail", URL: rc.URL + "/fail",
		RetryPolicy: &client.RetryPolicy{Preset: "eventgrid", MaxAttempts: new(1)}, DeadLetter: new(true)})
	check(t, "Subscriptions.Create fail", err)
	if w.fail.RetryPolicy.MaxAttempts == nil || *w.fail.RetryPolicy.MaxAttempts != 1 || w.fail.State != "active" || w.fail.EndpointID == "" {
		t.Errorf("Subscriptions.Create answered %+v", w.fail)
	}
	return w
}

// TestRoundTrip drives a real server through the client: an account and
// its key, subscriptions, a publish and a batch, the delivery log paged
// through next_cursor, attempts, a redelivery, dead letters and a redrive,
// a recover and its job, the endpoints, and the problems of a bad input
// (with its field, nothing created) and of an unknown id.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	w := setUpWorld(t, ctx)
	publishFive(t, ctx, w)
	delivered := pageDeliveries(t, ctx, w)
	attemptsAndRedeliver(t, ctx, w, delivered[0])
	deadLettersAndRedrive(t, ctx, w)
	recoverJob(t, ctx, w)
	endpoints(t, ctx, w)
	problems(t, ctx, w)
	deleteAll(t, ctx, w)
}

// publishFive publishes one event and a batch of four; each makes a
// delivery for both subscriptions.
func publishFive(t *testing.T, ctx context.Context, w *world) {
	event := func(i int) client.Event {
		return client.Event{ID: fmt.Sprintf("e%d", i), Source: "/shop", Type: "order.created",
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Extensions: map[string]any{"tenant": "t1"}}
	}
	one, err := w.c.Events.Publish(ctx, event(0))
	check(t, "Events.Publish", err)
	if len(one.Events) != 1 || one.Events[0].ID != "e0" || one.Events[0].Deliveries != 2 || one.Events[0].Duplicate {
		t.Errorf("Events.Publish: %+v", one)
	}
	batch, err := w.c.Events.PublishBatch(ctx, []client.Event{event(1), event(2), event(3), event(4)})
	check(t, "Events.PublishBatch", err)
	if len(batch.Events) != 4 || batch.Events[3].ID != "e4" || batch.Events[3].Deliveries != 2 {
		t.Errorf("Events.PublishBatch: %+v", batch)
	}
	again, err := w.c.Events.Publish(ctx, event(0))
	check(t, "Events.Publish again", err)
	if !again.Events[0].Duplicate || again.Events[0].Deliveries != 0 {
		t.Errorf("publishing e0 again: %+v, want a duplicate", again.Events[0])
	}
}

// listAll pages through the subscription's deliveries two at a time,
// following next_cursor by hand, and returns them and the pages.
func listAll(t *testing.T, ctx context.Context, c *client.Client, sub, status string) ([]client.Delivery, int) {
	var all []client.Delivery
	p := client.DeliveryListParams{ListParams: client.ListParams{Limit: 2}, SubscriptionID: sub, Status: status}
	pages := 0
	for {
		page, err := c.Deliveries.List(ctx, p)
		check(t, "Deliveries.List", err)
		pages++
		all = append(all, page.Data...)
		if page.NextCursor == "" || pages > 10 {
			return all, pages
		}
		p.Cursor = page.NextCursor
	}
}

// pageDeliveries waits for the five deliveries of the ok subscription to
// be delivered, pages through them by hand and with client.All, and
// returns them.
func pageDeliveries(t *testing.T, ctx context.Context, w *world) []client.Delivery {
	eventually(t, "five delivered", func() bool {
		d, _ := listAll(t, ctx, w.c, w.ok.ID, "delivered")
		return len(d) == 5
	})
	byHand, pages := listAll(t, ctx, w.c, w.ok.ID, "")
	if len(byHand) != 5 || pages != 3 {
		t.Fatalf("paging by 2: %d deliveries on %d pages, want 5 on 3", len(byHand), pages)
	}
	p := client.DeliveryListParams{ListParams: client.ListParams{Limit: 2}, SubscriptionID: w.ok.ID}
	var ids []string
	for d, err := range client.All(ctx, func(ctx context.Context, cursor string) (*client.Page[client.Delivery], error) {
		p.Cursor = cursor
		return w.c.Deliveries.List(ctx, p)
	}) {
		check(t, "All deliveries", err)
		ids = append(ids, d.ID)
		if d.SubscriptionID != w.ok.ID || d.EventSource != "/shop" || d.Attempts != 1 || d.DeliveredAt == nil {
			t.Errorf("delivery %+v", d)
		}
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 5 {
		t.Errorf("client.All yielded %d distinct deliveries, want 5", len(ids))
	}
	got, err := w.c.Deliveries.Get(ctx, byHand[0].ID)
	check(t, "Deliveries.Get", err)
	if got.ID != byHand[0].ID || got.Status != "delivered" || got.LastStatusCode == nil || *got.LastStatusCode != 204 {
		t.Errorf("Deliveries.Get: %+v", got)
	}
	return byHand
}

// attemptsAndRedeliver reads a delivery's attempt and redelivers it.
func attemptsAndRedeliver(t *testing.T, ctx context.Context, w *world, d client.Delivery) {
	at, err := w.c.Deliveries.Attempts(ctx, d.ID, client.ListParams{})
	check(t, "Deliveries.Attempts", err)
	if len(at.Data) != 1 || at.Data[0].Number != 1 || at.Data[0].StatusCode == nil || *at.Data[0].StatusCode != 204 || at.NextCursor != "" {
		t.Errorf("Deliveries.Attempts: %+v", at)
	}
	again, err := w.c.Deliveries.Redeliver(ctx, d.ID)
	check(t, "Deliveries.Redeliver", err)
	if again.ID != d.ID || again.Status != "pending" {
		t.Errorf("Deliveries.Redeliver: %+v", again)
	}
	eventually(t, "the redelivery", func() bool {
		at, err := w.c.Deliveries.Attempts(ctx, d.ID, client.ListParams{})
		check(t, "Deliveries.Attempts", err)
		return len(at.Data) == 2 && at.Data[1].Number == 2 && at.Data[1].Outcome == "http_204"
	})
}

// deadLettersAndRedrive waits for the failing subscription's five dead
// letters, reads them with their events, and redrives one.
func deadLettersAndRedrive(t *testing.T, ctx context.Context, w *world) {
	var dead *client.Page[client.DeadLetter]
	eventually(t, "five dead letters", func() bool {
		var err error
		dead, err = w.c.DeadLetters.List(ctx, client.DeadLetterListParams{SubscriptionID: w.fail.ID})
		check(t, "DeadLetters.List", err)
		return len(dead.Data) == 5
	})
	dl := dead.Data[0]
	if dl.DeadLetterReason == nil || *dl.DeadLetterReason != "MaxDeliveryAttemptsExceeded" || dl.DeliveryAttempts != 1 ||
		dl.Event == nil || dl.Event.Source != "/shop" || dl.Event.Extensions["tenant"] != "t1" {
		t.Errorf("dead letter %+v (event %+v)", dl, dl.Event)
	}
	res, err := w.c.DeadLetters.Redrive(ctx, client.RedriveParams{IDs: []string{dl.ID}})
	check(t, "DeadLetters.Redrive", err)
	if res.Redriven != 1 {
		t.Errorf("DeadLetters.Redrive: %+v, want 1 redriven", res)
	}
	eventually(t, "the redriven delivery dead-lettered again", func() bool {
		d, err := w.c.Deliveries.Get(ctx, dl.ID)
		check(t, "Deliveries.Get", err)
		return d.Status == "dead_lettered" && d.LastAttemptAt != nil && d.LastAttemptAt.After(*dl.LastAttemptAt)
	})
}

// recoverJob recovers the failing subscription's dead letters and follows
// the job to its end.
func recoverJob(t *testing.T, ctx context.Context, w *world) {
	job, err := w.c.Subscriptions.Recover(ctx, w.fail.ID, client.RecoverParams{Since: w.since})
	check(t, "Subscriptions.Recover", err)
	if job.Kind != "recover" || job.SubscriptionID != w.fail.ID || !slices.Equal(job.Statuses, []string{"dead_lettered", "dropped"}) {
		t.Errorf("Subscriptions.Recover: %+v", job)
	}
	eventually(t, "the recover job done", func() bool {
		j, err := w.c.Jobs.Get(ctx, job.ID)
		check(t, "Jobs.Get", err)
		if j.State == "failed" {
			t.Fatalf("the job failed: %+v", j)
		}
		job = j
		return j.State == "done"
	})
	if job.Done != 5 || job.Errors != 0 || job.FinishedAt == nil {
		t.Errorf("the finished job: %+v, want 5 done", job)
	}
}

// endpoints lists the account's two endpoints, freezes, enables and rate
// limits one.
func endpoints(t *testing.T, ctx context.Context, w *world) {
	eps, err := w.c.Endpoints.List(ctx, client.EndpointListParams{})
	check(t, "Endpoints.List", err)
	if len(eps.Data) != 2 {
		t.Fatalf("Endpoints.List: %d endpoints, want 2", len(eps.Data))
	}
	ep, err := w.c.Endpoints.Get(ctx, w.ok.EndpointID)
	check(t, "Endpoints.Get", err)
	if ep.URL != w.ok.URL || ep.State != "enabled" {
		t.Errorf("Endpoints.Get: %+v", ep)
	}
	frozen, err := w.c.Endpoints.Freeze(ctx, ep.ID)
	check(t, "Endpoints.Freeze", err)
	if frozen.State != "frozen" || frozen.FrozenAt == nil {
		t.Errorf("Endpoints.Freeze: %+v", frozen)
	}
	listed, err := w.c.Endpoints.List(ctx, client.EndpointListParams{State: "frozen"})
	check(t, "Endpoints.List frozen", err)
	if len(listed.Data) != 1 || listed.Data[0].ID != ep.ID {
		t.Errorf("Endpoints.List state=frozen: %+v", listed.Data)
	}
	enabled, err := w.c.Endpoints.Enable(ctx, ep.ID)
	check(t, "Endpoints.Enable", err)
	if enabled.State != "enabled" {
		t.Errorf("Endpoints.Enable: %+v", enabled)
	}
	limited, err := w.c.Endpoints.Update(ctx, ep.ID, client.EndpointUpdate{RateLimit: &client.RateLimit{PerSecond: 5, Burst: 10}})
	check(t, "Endpoints.Update", err)
	if limited.RateLimit == nil || limited.RateLimit.Burst != 10 {
		t.Errorf("Endpoints.Update: %+v", limited)
	}
}

// problems sends a bad subscription (a problem naming its field; nothing
// made) and asks for an unknown one (404).
func problems(t *testing.T, ctx context.Context, w *world) {
	_, err := w.c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "bad", URL: "https://example.com/h",
		RetryPolicy: &client.RetryPolicy{MaxAttempts: new(-1)}})
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != 400 || p.Field != "retry_policy.max_attempts" || p.Type != "urn:herald:problem:validation" {
		t.Errorf("a negative max_attempts: %v (%+v), want a 400 problem with field retry_policy.max_attempts", err, p)
	}
	found, err := w.c.Subscriptions.List(ctx, client.SubscriptionListParams{Name: "bad"})
	check(t, "Subscriptions.List", err)
	if len(found.Data) != 0 {
		t.Errorf("the refused subscription was made: %+v", found.Data)
	}
	_, err = w.c.Subscriptions.Get(ctx, "sub_01jq3v6x9k2m4n5p6q7r8s9t0v")
	if !errors.As(err, &p) || p.Status != 404 || p.Type != "urn:herald:problem:not-found" {
		t.Errorf("an unknown subscription: %v, want a 404 problem", err)
	}
	_, err = w.c.Accounts.List(ctx, client.ListParams{})
	if !errors.As(err, &p) || p.Status != 403 {
		t.Errorf("an account key listing accounts: %v, want 403", err)
	}
}

// deleteAll deletes the subscriptions, the key and the account.
func deleteAll(t *testing.T, ctx context.Context, w *world) {
	check(t, "Subscriptions.Delete", w.c.Subscriptions.Delete(ctx, w.ok.ID))
	check(t, "Subscriptions.Delete", w.c.Subscriptions.Delete(ctx, w.fail.ID))
	inAccount := newClient(t, w.base, adminKey, client.WithAccount(w.account.ID))
	keys, err := inAccount.Keys.List(ctx, client.ListParams{})
	check(t, "Keys.List", err)
	if len(keys.Data) != 1 || keys.Data[0].ID != w.key.ID || keys.Data[0].Name != "ops" {
		t.Errorf("Keys.List in the account: %+v, want the key made", keys.Data)
	}
	check(t, "Keys.Delete", w.admin.Keys.Delete(ctx, w.key.ID))
	var p *client.Problem
	if _, err := w.c.Subscriptions.List(ctx, client.SubscriptionListParams{}); !errors.As(err, &p) || p.Status != 401 {
		t.Errorf("the revoked key: %v, want 401", err)
	}
	check(t, "Accounts.Delete", w.admin.Accounts.Delete(ctx, w.account.ID))
	if _, err := w.admin.Accounts.Get(ctx, w.account.ID); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("the deleted account: %v, want 404", err)
	}
}
