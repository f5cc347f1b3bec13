package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// RunUpgrades runs every upgrade check: open must return a store opened by
// this build on a database written at the given earlier schema version (its
// migrations applied as that release did) holding data. The checks run in
// parallel (t.Parallel), each on a database of its own.
func RunUpgrades(t *testing.T, open func(t *testing.T, version int, data string) store.Store) {
	for _, u := range []struct {
		version int
		data    string
		check   func(*testing.T, store.Store)
	}{{1, V1Data, CheckUpgradeFromV1}, {2, V2Data, CheckUpgradeFromV2}, {3, V3Data, CheckUpgradeFromV3},
		{4, V4Data, CheckUpgradeFromV4}, {5, V5Data, CheckUpgradeFromV5},
		{6, V6Data, CheckUpgradeFromV6}, {7, V7Data, CheckUpgradeFromV7}, {8, V8Data, CheckUpgradeFromV8},
		{9, V9Data, CheckUpgradeFromV9}, {10, V10Data, CheckUpgradeFromV10}, {11, V11Data, CheckUpgradeFromV11},
		{ConsoleSessionsFrom, ConsoleSessionsData, CheckConsoleSessionsUpgrade},
		{StatsFrom, StatsData, CheckStatsUpgrade},
		{PortalSessionsFrom, PortalSessionsData, CheckPortalSessionsUpgrade},
		{RateLimitsFrom, RateLimitsData, CheckRateLimitsUpgrade},
		{OrderingFrom, OrderingData, CheckOrderingUpgrade},
		{JobsFrom, JobsData, CheckJobsUpgrade},
		{TracingFrom, TracingData, CheckTracingUpgrade},
		{JobTurnsFrom, JobTurnsData, CheckJobTurnsUpgrade},
		{OpenDeliveriesFrom, OpenDeliveriesData, CheckOpenDeliveriesUpgrade},
		{EventTypesFrom, EventTypesData, CheckEventTypesUpgrade},
		{SchemaErrorsFrom, SchemaErrorsData, CheckSchemaErrorsUpgrade},
		{SourcesFrom, SourcesData, CheckSourcesUpgrade}} {
		t.Run(fmt.Sprintf("FromV%d", u.version), func(t *testing.T) {
			t.Parallel()
			u.check(t, open(t, u.version, u.data))
		})
	}
}

// endpointOf is the ID s makes of a URL in account.DefaultID: since schema 11
// every endpoint ID stored before is the keyed one of its URL.
func endpointOf(s store.Store, url string) string { return s.EndpointID(account.DefaultID, url) }

// catalogAfterUpgrade returns the n subscriptions of an upgraded store
// as the catalog reads them (SubscriptionChanges from 0), checking that
// each is what GetSubscription reads.
func catalogAfterUpgrade(t *testing.T, s store.Store, n int) []subscription.Subscription {
	t.Helper()
	changes, err := s.SubscriptionChanges(context.Background(), 0)
	if err != nil || len(changes.Changed) != n {
		t.Fatalf("SubscriptionChanges(0) after the upgrade: %+v, %v; want %d subscriptions", changes, err, n)
	}
	for _, c := range changes.Changed {
		sub, err := s.GetSubscription(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "subscription "+c.ID+" in the catalog after the upgrade", c, sub)
	}
	return changes.Changed
}

// orphanID checks id, the endpoint ID a delivery of an endpoint no
// subscription uses any more got in schema 11 for old: an endpoint ID
// (ep_ and 20 characters) that is neither old nor one of others'.
func orphanID(t *testing.T, delivery, id, old string, others ...string) {
	t.Helper()
	if len(id) != len("ep_")+20 || !strings.HasPrefix(id, "ep_") || id == old || slices.Contains(others, id) {
		t.Fatalf("delivery %s on %s after the upgrade; want a new ID for %s, not one of %v", delivery, id, old, others)
	}
}

// V1Data is written, with plain SQL both stores accept, into a database at
// schema version 1 (the first release's): one endpoint, a live subscription
// with a pending and a delivered delivery, and a pending delivery of a
// subscription that was deleted while a publish raced it (the first
// release could leave such a delivery pending for ever). CheckUpgradeFromV1
// then checks the store opened on it.
const V1Data = `
INSERT INTO endpoints (id, url, created_at) VALUES ('ep_v1', 'https://v1.example/hook', 1767603600000);
INSERT INTO subscriptions (id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at)
VALUES ('sub_v1', 'v1', 'https://v1.example/hook', 'ep_v1', '["invoice.paid"]', '', '',
	'{"preset":"eventgrid"}', 30000, '{"X-Api-Key":"k"}', true, 'active', 1767603600000, 1767603600000);
INSERT INTO events (id, source, type, subject, published_at, payload)
VALUES ('e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('e2', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e2"}');
INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at)
VALUES ('dlv_v1_pending', 'sub_v1', 'ep_v1', (SELECT seq FROM events WHERE id = 'e1'), 'pending',
	1767603600000, 1767603600000, 1767603600000),
       ('dlv_v1_orphan', 'sub_gone', 'ep_v1', (SELECT seq FROM events WHERE id = 'e2'), 'pending',
	1767603600000, 1767603600000, 1767603600000);
INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, delivered_at)
VALUES ('dlv_v1_done', 'sub_v1', 'ep_v1', (SELECT seq FROM events WHERE id = 'e2'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603601000);
`

// CheckUpgradeFromV1 checks a store opened on a version-1 database holding
// V1Data: everything is still there and works, and the orphaned pending
// delivery ended as dropped.
func CheckUpgradeFromV1(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	sub, err := s.GetSubscription(ctx, "sub_v1")
	if err != nil || sub.Name != "v1" || sub.Headers["X-Api-Key"] != "k" || sub.Version <= 0 {
		t.Fatalf("subscription after the upgrade: %+v, %v", sub, err)
	}
	changes, err := s.SubscriptionChanges(ctx, 0)
	if err != nil || len(changes.Changed) != 1 || changes.Changed[0].ID != "sub_v1" {
		t.Fatalf("SubscriptionChanges(0) after the upgrade: %+v, %v", changes, err)
	}
	for id, want := range map[string]delivery.Status{
		"dlv_v1_pending": delivery.StatusPending, "dlv_v1_done": delivery.StatusDelivered, "dlv_v1_orphan": delivery.StatusDropped,
	} {
		d, err := s.GetDelivery(ctx, id)
		if err != nil || d.Status != want {
			t.Fatalf("delivery %s after the upgrade: %+v, %v; want %s", id, d, err, want)
		}
	}
	if d, _ := s.GetDelivery(ctx, "dlv_v1_orphan"); d.DeadLetterReason != delivery.ReasonSubscriptionDeleted {
		t.Fatalf("orphaned delivery's reason %q, want %q", d.DeadLetterReason, delivery.ReasonSubscriptionDeleted)
	}
	// The pending delivery is claimable and recordable as before.
	now := time.UnixMilli(1767603700000).UTC()
	lease := store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)}
	cs, err := s.ClaimDue(ctx, endpointOf(s, "https://v1.example/hook"), now, 10, lease)
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v1_pending" || string(cs[0].Payload) != `{"specversion":"1.0","id":"e1"}` {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded("dlv_v1_pending", 1, now)}); err != nil {
		t.Fatal(err)
	}
	// Writes advance the versions from where the upgrade put them.
	sub.EventTypes = []string{"invoice.voided"}
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	next, err := s.SubscriptionChanges(ctx, changes.Version)
	if err != nil || len(next.Changed) != 1 || next.Version != changes.Version+1 {
		t.Fatalf("changes after an update: %+v, %v", next, err)
	}
	if _, err := s.Publish(ctx, []store.NewEvent{{ID: "e1", Source: "/billing", Type: "invoice.paid", PublishedAt: now}},
		store.PublishOptions{CatalogVersion: next.Version}); err != nil {
		t.Fatalf("Publish after the upgrade: %v", err)
	}
	eps, v, err := s.EndpointChanges(ctx, 0)
	if err != nil || v <= 0 || len(eps) != 1 {
		t.Fatalf("EndpointChanges(0) after the upgrade: %+v, %d, %v", eps, v, err)
	}
	if _, err := s.Redeliver(ctx, "dlv_v1_orphan", now); !errors.Is(err, store.ErrSubscriptionDeleted) {
		t.Fatalf("Redeliver of the orphan: %v; want ErrSubscriptionDeleted", err)
	}
}

// V2Data is written into a database at schema version 2, which kept every
// endpoint row for ever and left a moved subscription's deliveries on its
// old URL's endpoint: ep_kept is used by sub_kept (its circuit disabled);
// ep_left (a URL with a password) by nobody; sub_moved moved from ep_old to
// ep_new, leaving a pending and a delivered delivery on ep_old.
// CheckUpgradeFromV2 then checks the store opened on it.
const V2Data = `
INSERT INTO endpoints (id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_kept', 'https://kept.example/hook', 'disabled', 2000, 1767603600000, 1767604200000, 1767603600000, 2),
       ('ep_left', 'https://user:secret@left.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1),
       ('ep_old', 'https://old.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1),
       ('ep_new', 'https://new.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at, version)
VALUES ('sub_kept', 'kept', 'https://kept.example/hook', 'ep_kept', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', true, 'active', 1767603600000, 1767603600000, 2),
       ('sub_moved', 'moved', 'https://new.example/hook', 'ep_new', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', true, 'active', 1767603600000, 1767603600000, 3);
UPDATE counters SET value = 3 WHERE name = 'catalog';
UPDATE counters SET value = 2 WHERE name = 'endpoints';
INSERT INTO events (id, source, type, subject, published_at, payload)
VALUES ('e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('e2', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e2"}');
INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, delivered_at)
VALUES ('dlv_v2_pending', 'sub_moved', 'ep_old', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0),
       ('dlv_v2_done', 'sub_moved', 'ep_old', (SELECT seq FROM events WHERE id = 'e2'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603601000);
`

// CheckUpgradeFromV2 checks a store opened on a version-2 database holding
// V2Data: the endpoints no subscription uses are gone, the others kept with
// their health (under their keyed IDs, at a newer version), the moved
// subscription's pending delivery is on its new endpoint, where it is
// claimed, and its delivered one on a keyed ID of its own.
func CheckUpgradeFromV2(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	eps, err := s.AllEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range eps {
		ids = append(ids, e.ID)
	}
	kept, moved := endpointOf(s, "https://kept.example/hook"), endpointOf(s, "https://new.example/hook")
	equal(t, "endpoints after the upgrade", ids, sortedCopy([]string{kept, moved}))
	if e, err := s.GetEndpoint(ctx, kept); err != nil || e.Health.State != health.Disabled || e.Health.ConsecutiveFailures != 2000 ||
		e.Version <= 2 {
		t.Fatalf("kept endpoint after the upgrade: %+v, %v", e, err)
	}
	if d, err := s.GetDelivery(ctx, "dlv_v2_pending"); err != nil || d.EndpointID != moved {
		t.Fatalf("delivery dlv_v2_pending after the upgrade: %+v, %v; want it on %s", d, err, moved)
	}
	d, err := s.GetDelivery(ctx, "dlv_v2_done")
	if err != nil {
		t.Fatal(err)
	}
	orphanID(t, "dlv_v2_done", d.EndpointID, "ep_old", kept, moved)
	now := time.UnixMilli(1767603700000).UTC()
	cs, err := s.ClaimDue(ctx, moved, now, 10, store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v2_pending" {
		t.Fatalf("ClaimDue on the new endpoint after the upgrade: %+v, %v", cs, err)
	}
	// Subscription writes keep it so.
	if err := s.DeleteSubscription(ctx, "sub_moved", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpoint(ctx, moved); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(%s) after its subscription was deleted: %v; want ErrNotFound", moved, err)
	}
}

// V3Data is written into a database at schema version 3, which had no
// secret headers and no signing keys: two subscriptions, one with a pending
// delivery. CheckUpgradeFromV3 then checks the store opened on it.
const V3Data = `
INSERT INTO endpoints (id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v3', 'https://v3.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at, version)
VALUES ('sub_v3a', 'v3a', 'https://v3.example/hook', 'ep_v3', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{"X-Api-Key":"k"}', true, 'active', 1767603600000, 1767603600000, 1),
       ('sub_v3b', 'v3b', 'https://v3.example/hook', 'ep_v3', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', true, 'active', 1767603600000, 1767603600000, 2);
UPDATE counters SET value = 2 WHERE name = 'catalog';
UPDATE counters SET value = 1 WHERE name = 'endpoints';
INSERT INTO events (id, source, type, subject, published_at, payload)
VALUES ('e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}');
INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, delivered_at)
VALUES ('dlv_v3_pending', 'sub_v3a', 'ep_v3', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0);
`

// CheckUpgradeFromV3 checks a store opened on a version-3 database holding
// V3Data: each subscription got an HMAC-SHA256 secret of its own on the
// upgrade (so its pushes are signed from then on) and no secret headers,
// the rest is kept, and its pending delivery is still claimed.
func CheckUpgradeFromV3(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	changes, err := s.SubscriptionChanges(ctx, 0)
	if err != nil || len(changes.Changed) != 2 {
		t.Fatalf("SubscriptionChanges(0) after the upgrade: %+v, %v", changes, err)
	}
	var keys []string
	for _, sub := range changes.Changed {
		sg := sub.Signing
		if sg.Algorithm != "hmac-sha256" || len(sg.Keys) != 1 || len(sg.Keys[0].Key) != 32 || !sg.Keys[0].ExpiresAt.IsZero() {
			t.Fatalf("subscription %s after the upgrade has signing %+v; want one 32-byte hmac-sha256 key", sub.ID, sg)
		}
		if len(sub.SecretHeaders) != 0 {
			t.Fatalf("subscription %s after the upgrade has secret headers %v", sub.ID, sub.SecretHeaders)
		}
		keys = append(keys, string(sg.Keys[0].Key))
	}
	if keys[0] == keys[1] {
		t.Fatalf("the upgrade gave two subscriptions the same key")
	}
	if sub, err := s.GetSubscription(ctx, "sub_v3a"); err != nil || sub.Headers["X-Api-Key"] != "k" || len(sub.Signing.Keys) != 1 {
		t.Fatalf("sub_v3a after the upgrade: %+v, %v", sub, err)
	}
	now := time.UnixMilli(1767603700000).UTC()
	cs, err := s.ClaimDue(ctx, endpointOf(s, "https://v3.example/hook"), now, 10, store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v3_pending" {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded("dlv_v3_pending", 1, now)}); err != nil {
		t.Fatal(err)
	}
}

// V4Data is written into a database at schema version 4, which had no
// accounts: a subscription with secret headers and a signing key, its
// endpoint, and three events: e1 with a pending delivery, e2 with a
// delivered one, and e3, the newest, deleted since (as Cleanup does).
// CheckUpgradeFromV4 then checks the store opened on it.
const V4Data = `
INSERT INTO endpoints (id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v4', 'https://v4.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, created_at, updated_at, version)
VALUES ('sub_v4', 'v4', 'https://v4.example/hook', 'ep_v4', '["invoice.paid"]', 'invoices/', '',
	'{"preset":"eventgrid"}', 30000, '{"X-Api-Key":"k"}', '{"Authorization":"Bearer t0ken"}',
	'{"algorithm":"hmac-sha256","keys":[{"key":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}]}',
	true, 'active', 1767603600000, 1767603600000, 2);
UPDATE counters SET value = 2 WHERE name = 'catalog';
INSERT INTO events (id, source, type, subject, published_at, payload)
VALUES ('e1', '/billing', 'invoice.paid', 'invoices/1', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('e2', '/billing', 'invoice.paid', 'invoices/2', 1767603600000, '{"specversion":"1.0","id":"e2"}'),
       ('e3', '/billing', 'invoice.paid', 'invoices/3', 1767603600000, '{"specversion":"1.0","id":"e3"}');
DELETE FROM events WHERE id = 'e3';
INSERT INTO deliveries (id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, delivered_at)
VALUES ('dlv_v4_pending', 'sub_v4', 'ep_v4', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0),
       ('dlv_v4_done', 'sub_v4', 'ep_v4', (SELECT seq FROM events WHERE id = 'e2'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603601000);
`

// CheckUpgradeFromV4 checks a store opened on a version-4 database holding
// V4Data: everything is in the default account, which exists; the
// subscription keeps its secrets; the pending delivery is still claimed;
// deduplication holds in the default account and not in another; a seq is
// not reused; and accounts and keys work.
func CheckUpgradeFromV4(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	if a, err := s.GetAccount(ctx, account.DefaultID); err != nil || a.Settings.FailurePolicy != "retry" || a.CreatedAt.IsZero() {
		t.Fatalf("default account after the upgrade: %+v, %v", a, err)
	}
	v, err := s.AuthVersion(ctx)
	if err != nil || v <= 0 {
		t.Fatalf("AuthVersion after the upgrade: %d, %v", v, err)
	}
	sub, ep := checkV4Subscription(t, s)
	seqs := checkV4Deliveries(t, s)
	cs, err := s.ClaimDue(ctx, ep, now, 10, store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v4_pending" || cs[0].AccountID != account.DefaultID ||
		string(cs[0].Payload) != `{"specversion":"1.0","id":"e1"}` {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded("dlv_v4_pending", 1, now)}); err != nil {
		t.Fatal(err)
	}

	acc := checkV4Keys(t, s, v, now)
	checkV4Dedup(t, s, acc, seqs, now)

	// Names are unique per account from now on.
	other := sub
	other.ID, other.AccountID = "sub_v4b", acc.ID
	if err := s.CreateSubscription(ctx, other); err != nil {
		t.Fatalf("the upgraded subscription's name in a new account: %v", err)
	}
	other.ID, other.AccountID = "sub_v4c", account.DefaultID
	if err := s.CreateSubscription(ctx, other); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("the upgraded subscription's name again in the default account: %v; want ErrNameTaken", err)
	}
}

// checkV4Subscription: V4Data's subscription and its endpoint are the
// default account's, the subscription re-keyed at a new catalog version
// with its secrets; it returns them.
func checkV4Subscription(t *testing.T, s store.Store) (subscription.Subscription, string) {
	t.Helper()
	ctx := context.Background()
	sub, err := s.GetSubscription(ctx, "sub_v4")
	if err != nil {
		t.Fatal(err)
	}
	if sub.Version <= 2 {
		t.Fatalf("subscription after the upgrade at version %d; want it re-keyed at a newer one than 2", sub.Version)
	}
	ep := endpointOf(s, "https://v4.example/hook")
	want := subscription.Subscription{ID: "sub_v4", AccountID: account.DefaultID, Name: "v4", URL: "https://v4.example/hook",
		EndpointID: ep, EventTypes: []string{"invoice.paid"}, SubjectBeginsWith: "invoices/",
		RetryPolicy: []byte(`{"preset":"eventgrid"}`), Timeout: 30 * time.Second,
		Headers: map[string]string{"X-Api-Key": "k"}, SecretHeaders: map[string]string{"Authorization": "Bearer t0ken"},
		Signing:    signing.Keyring{Algorithm: "hmac-sha256", Keys: []signing.Key{{Key: []byte("0123456789abcdef0123456789abcdef")}}},
		DeadLetter: true, State: "active", DeliveryMode: subscription.ModePush, FailurePolicy: subscription.FailureRetry,
		CreatedAt: time.UnixMilli(1767603600000).UTC(), UpdatedAt: time.UnixMilli(1767603600000).UTC(),
		Version: sub.Version}
	equal(t, "subscription after the upgrade", sub, want)
	if ss, _, err := s.ListSubscriptions(ctx, account.DefaultID, store.Page{}); err != nil || len(ss) != 1 || ss[0].ID != "sub_v4" {
		t.Fatalf("ListSubscriptions(default) after the upgrade: %+v, %v", ss, err)
	}
	e, err := s.GetEndpoint(ctx, ep)
	if err != nil || e.AccountID != account.DefaultID {
		t.Fatalf("endpoint after the upgrade: %+v, %v", e, err)
	}
	if eps, _, err := s.ListEndpoints(ctx, account.DefaultID, "", store.Page{}); err != nil || len(eps) != 1 || eps[0].ID != ep {
		t.Fatalf("ListEndpoints(default) after the upgrade: %+v, %v", eps, err)
	}
	return sub, ep
}

// checkV4Deliveries: V4Data's deliveries and events are the default
// account's, and its pending delivery lists as such; it returns the
// events' seqs (of the pending delivery's, then the delivered one's).
func checkV4Deliveries(t *testing.T, s store.Store) []int64 {
	t.Helper()
	ctx := context.Background()
	var seqs []int64
	for _, id := range []string{"dlv_v4_pending", "dlv_v4_done"} {
		d, err := s.GetDelivery(ctx, id)
		if err != nil || d.AccountID != account.DefaultID {
			t.Fatalf("delivery %s after the upgrade: %+v, %v", id, d, err)
		}
		ev, err := s.GetEvent(ctx, d.EventSeq)
		if err != nil || ev.AccountID != account.DefaultID || ev.ID != d.EventID {
			t.Fatalf("event %d after the upgrade: %+v, %v", d.EventSeq, ev, err)
		}
		seqs = append(seqs, d.EventSeq)
	}
	ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{AccountID: account.DefaultID, Status: delivery.StatusPending})
	if err != nil || len(ds) != 1 || ds[0].ID != "dlv_v4_pending" {
		t.Fatalf("pending deliveries of the default account after the upgrade: %+v, %v", ds, err)
	}
	return seqs
}

// checkV4Keys: the upgraded store takes its first key (advancing the auth
// version past v), an account of its own and a key in it; it returns the
// account.
func checkV4Keys(t *testing.T, s store.Store, v int64, now time.Time) account.Account {
	t.Helper()
	ctx := context.Background()
	key := account.Key{ID: "key_v4", AccountID: account.DefaultID, Role: account.RoleAdmin, Name: "first",
		Hash: []byte("0123456789abcdef0123456789abcdef"), Prefix: "hk_v4", CreatedAt: now}
	if ok, err := s.CreateFirstKey(ctx, key); err != nil || !ok {
		t.Fatalf("CreateFirstKey after the upgrade = %v, %v; want true", ok, err)
	}
	if got, err := s.AuthVersion(ctx); err != nil || got <= v {
		t.Fatalf("AuthVersion after a key was created: %d, %v; want more than %d", got, err, v)
	}
	acc := account.Account{ID: "acc_" + strings.Repeat("1", 26), Name: "tenant", Settings: account.Settings{FailurePolicy: "retry"},
		CreatedAt: now, UpdatedAt: now}
	if err := s.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(ctx, account.Key{ID: "key_v4b", AccountID: acc.ID, Role: account.RoleAccount, Name: "tenant",
		Hash: []byte("another hash of thirty-two bytes"), Prefix: "hk_v4b", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	return acc
}

// checkV4Dedup: e1 again is new in another account, a duplicate in the
// default one; the new event does not take the deleted e3's seq
// (published first and alone: a refused duplicate may use up a seq).
func checkV4Dedup(t *testing.T, s store.Store, acc account.Account, seqs []int64, now time.Time) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Publish(ctx, []store.NewEvent{
		{AccountID: acc.ID, ID: "e1", Source: "/billing", Type: "invoice.paid", Payload: []byte(`{}`), PublishedAt: now},
	}, store.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e3 := max(seqs[0], seqs[1]) + 1; res[0].Duplicate || res[0].Seq <= e3 {
		t.Fatalf("e1 in a new account after the upgrade: %+v; want a new event after e3's seq %d", res[0], e3)
	}
	res, err = s.Publish(ctx, []store.NewEvent{
		{ID: "e1", Source: "/billing", Type: "invoice.paid", Payload: []byte(`{}`), PublishedAt: now},
	}, store.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate || res[0].Seq != seqs[0] {
		t.Fatalf("e1 again in the default account after the upgrade: %+v; want a duplicate of seq %d", res[0], seqs[0])
	}
}

// V5Data is written into a database at schema version 5, which had no pull
// subscriptions, failure policies or locks: a push subscription with its
// endpoint, a pending delivery and a delivered one. CheckUpgradeFromV5 then
// checks the store opened on it.
const V5Data = `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v5', 'acc_default', 'https://v5.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, created_at, updated_at, version)
VALUES ('sub_v5', 'acc_default', 'v5', 'https://v5.example/hook', 'ep_v5', '["invoice.paid"]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}',
	'{"algorithm":"hmac-sha256","keys":[{"key":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}]}',
	true, 'active', 1767603600000, 1767603600000, 2);
UPDATE counters SET value = 2 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', 'invoices/1', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('acc_default', 'e2', '/billing', 'invoice.paid', 'invoices/2', 1767603600000, '{"specversion":"1.0","id":"e2"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, delivered_at)
VALUES ('dlv_v5_pending', 'acc_default', 'sub_v5', 'ep_v5', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0),
       ('dlv_v5_done', 'acc_default', 'sub_v5', 'ep_v5', (SELECT seq FROM events WHERE id = 'e2'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603601000);
`

// CheckUpgradeFromV5 checks a store opened on a version-5 database holding
// V5Data: the subscription is a push subscription that retries, still
// active; the deliveries were never received nor locked; the pending one
// is still claimed; and a new pull subscription, which gets no endpoint,
// queues deliveries that are received and acknowledged.
func CheckUpgradeFromV5(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	ep := endpointOf(s, "https://v5.example/hook")
	sub, err := s.GetSubscription(ctx, "sub_v5")
	if err != nil || sub.DeliveryMode != subscription.ModePush || sub.FailurePolicy != subscription.FailureRetry ||
		sub.State != subscription.StateActive || sub.EndpointID != ep || sub.Version <= 2 {
		t.Fatalf("subscription after the upgrade: %+v, %v; want push, retry, active on %s, re-keyed after version 2", sub, err, ep)
	}
	for id, want := range map[string]delivery.Status{"dlv_v5_pending": delivery.StatusPending, "dlv_v5_done": delivery.StatusDelivered} {
		d, err := s.GetDelivery(ctx, id)
		if err != nil || d.Status != want || d.Receives != 0 || !d.LockedUntil.IsZero() {
			t.Fatalf("delivery %s after the upgrade: %+v, %v; want %s, never received", id, d, err, want)
		}
	}
	if n, err := s.CountQueued(ctx); err != nil || n != 0 {
		t.Fatalf("CountQueued after the upgrade = %d, %v; want 0", n, err)
	}
	if ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{EndpointID: ep, Status: delivery.StatusQueued}); err != nil || len(ds) != 0 {
		t.Fatalf("queued deliveries of %s after the upgrade: %+v, %v; want none", ep, ds, err)
	}
	cs, err := s.ClaimDue(ctx, ep, now, 10, store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v5_pending" || string(cs[0].Payload) != `{"specversion":"1.0","id":"e1"}` {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded("dlv_v5_pending", 1, now)}); err != nil {
		t.Fatal(err)
	}

	pull := subscription.Subscription{ID: "sub_v5pull", Name: "v5-pull", EventTypes: []string{"invoice.paid"}, State: subscription.StateActive,
		DeliveryMode: subscription.ModePull, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSubscription(ctx, pull); err != nil {
		t.Fatal(err)
	}
	if eps, err := s.AllEndpoints(ctx); err != nil || len(eps) != 1 || eps[0].ID != ep {
		t.Fatalf("endpoints after a pull subscription was created: %+v, %v; want %s only", eps, err, ep)
	}
	if _, err := s.Publish(ctx, []store.NewEvent{{ID: "e3", Source: "/billing", Type: "invoice.paid", Payload: []byte(`{}`),
		PublishedAt: now, Deliveries: []store.NewDelivery{{ID: "dlv_v5_queued", SubscriptionID: pull.ID, Queued: true}}}},
		store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: pull.ID, Now: now, Max: 10, LockFor: time.Minute})
	if err != nil || len(res.Received) != 1 || res.Received[0].ID != "dlv_v5_queued" || res.Received[0].Receives != 1 {
		t.Fatalf("Receive after the upgrade: %+v, %v", res, err)
	}
	got, err := s.Settle(ctx, store.SettleRequest{SubscriptionID: pull.ID, Action: store.Acknowledge,
		Tokens: []string{res.Received[0].LockToken}, Now: now})
	if err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("Settle after the upgrade = %v, %v", got, err)
	}
	if d, err := s.GetDelivery(ctx, "dlv_v5_queued"); err != nil || d.Status != delivery.StatusDelivered {
		t.Fatalf("acknowledged delivery after the upgrade: %+v, %v", d, err)
	}
}

// V6Data is written into a database at schema version 6, before delivery
// options: a push subscription with a pending delivery, and a pull one.
const V6Data = `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v6', 'acc_default', 'https://v6.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	created_at, updated_at, version)
VALUES ('sub_v6', 'acc_default', 'v6', 'https://v6.example/hook', 'ep_v6', '["invoice.paid"]', '', '',
	'{"preset":"sap"}', 30000, '{}', '{}', '', true, 'deactivated', 'push', 'queue', 1767603600000, 1767603600000, 2),
       ('sub_v6pull', 'acc_default', 'v6-pull', '', '', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'pull', 'retry', 1767603600000, 1767603600000, 3);
UPDATE counters SET value = 3 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at)
VALUES ('dlv_v6_queued', 'acc_default', 'sub_v6', 'ep_v6', (SELECT seq FROM events WHERE id = 'e1'), 'queued', 1,
	1767603600000, 1767603600000, 1767603600000);
`

// CheckUpgradeFromV6 checks a store opened on a version-6 database holding
// V6Data: both subscriptions read back with the default delivery options
// and their state, mode and policy kept, and the queued delivery is still
// receivable.
func CheckUpgradeFromV6(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	for id, want := range map[string]struct{ mode, state, policy string }{
		"sub_v6":     {subscription.ModePush, subscription.StateDeactivated, subscription.FailureQueue},
		"sub_v6pull": {subscription.ModePull, subscription.StateActive, subscription.FailureRetry},
	} {
		sub, err := s.GetSubscription(ctx, id)
		if err != nil || sub.DeliveryMode != want.mode || sub.State != want.state || sub.FailurePolicy != want.policy ||
			!reflect.DeepEqual(sub.Delivery, subscription.DeliveryOptions{}) {
			t.Fatalf("subscription %s after the upgrade: %+v, %v; want %+v and default delivery options", id, sub, err, want)
		}
	}
	res, err := s.Receive(ctx, store.ReceiveRequest{SubscriptionID: "sub_v6", Now: now, Max: 10, LockFor: time.Minute})
	if err != nil || len(res.Received) != 1 || res.Received[0].ID != "dlv_v6_queued" {
		t.Fatalf("Receive after the upgrade: %+v, %v", res, err)
	}
	// Delivery options written after the upgrade read back.
	sub, _ := s.GetSubscription(ctx, "sub_v6")
	sub.Delivery = subscription.DeliveryOptions{Schema: "eventgrid", MaxEventsPerBatch: 10, PreferredBatchSizeKB: 128,
		Validation: "eventgrid", ValidationToken: "tok", DeadLetterURL: "https://dl.example/"}
	sub.UpdatedAt = now
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetSubscription(ctx, "sub_v6"); err != nil || !reflect.DeepEqual(got.Delivery, sub.Delivery) {
		t.Fatalf("delivery options after an update: %+v, %v; want %+v", got.Delivery, err, sub.Delivery)
	}
}

// V7Data is written into a database at schema version 7, before the
// deliveries of dead letters, whose delivery options could already name a
// dead-letter URL: sub_v7a (on ep_v7) names one no subscription uses
// otherwise; sub_v7b names its own URL (ep_dam5…, the ID schema 7 made
// of https://shared.v7.example/hook: sqlrow.LegacyEndpointID); the pull subscription
// sub_v7pull names one too. sub_v7a has a pending delivery and a
// dead-lettered one.
const V7Data = `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v7', 'acc_default', 'https://v7.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1),
       ('ep_dam5xg7cz24v523r9dnf', 'acc_default', 'https://shared.v7.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, created_at, updated_at, version)
VALUES ('sub_v7a', 'acc_default', 'v7a', 'https://v7.example/hook', 'ep_v7', '["invoice.paid"]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry',
	'{"dead_letter_url":"https://dl.v7.example/hook"}', 1767603600000, 1767603601000, 2),
       ('sub_v7b', 'acc_default', 'v7b', 'https://shared.v7.example/hook', 'ep_dam5xg7cz24v523r9dnf', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry',
	'{"schema":"eventgrid","dead_letter_url":"https://shared.v7.example/hook"}', 1767603600000, 1767603600000, 3),
       ('sub_v7pull', 'acc_default', 'v7-pull', '', '', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'pull', 'retry',
	'{"dead_letter_url":"https://pull.v7.example/hook"}', 1767603600000, 1767603600000, 4);
UPDATE counters SET value = 4 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('acc_default', 'e2', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e2"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_status_code, last_outcome, dead_letter_reason)
VALUES ('dlv_v7_pending', 'acc_default', 'sub_v7a', 'ep_v7', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0, 0, '', ''),
       ('dlv_v7_dead', 'acc_default', 'sub_v7a', 'ep_v7', (SELECT seq FROM events WHERE id = 'e2'), 'dead_lettered', 3,
	1767603600000, 0, 1767603600000, 1767603650000, 400, 'http_400', 'NonRetriableStatus');
`

// CheckUpgradeFromV7 checks a store opened on a version-7 database holding
// V7Data: the dead-letter URLs of the push subscriptions got their endpoint
// rows (the new one fresh, created at its subscription's UpdatedAt; the one
// a URL already had kept as it was; all re-keyed at a new endpoint
// version), the pull subscription's none; every delivery is a dead letter
// of none; and
// dead letters are then written, claimed and their endpoints kept and
// deleted as on a new database.
func CheckUpgradeFromV7(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	const dlURL, sharedURL = "https://dl.v7.example/hook", "https://shared.v7.example/hook"
	if legacy := sqlrow.LegacyEndpointID("", sharedURL); legacy != "ep_dam5xg7cz24v523r9dnf" {
		t.Fatalf("V7Data names %s's endpoint ep_dam5xg7cz24v523r9dnf; it is %s", sharedURL, legacy)
	}
	v7, dlEp, shared := endpointOf(s, "https://v7.example/hook"), endpointOf(s, dlURL), endpointOf(s, sharedURL)
	eps, err := s.AllEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range eps {
		ids = append(ids, e.ID)
	}
	equal(t, "endpoints after the upgrade", sortedCopy(ids), sortedCopy([]string{v7, shared, dlEp}))
	e, err := s.GetEndpoint(ctx, dlEp)
	if err != nil || e.URL != dlURL || e.AccountID != account.DefaultID || e.Version <= 1 ||
		!e.CreatedAt.Equal(time.UnixMilli(1767603601000)) || e.Health.ConsecutiveFailures != 0 {
		t.Fatalf("dead-letter endpoint after the upgrade: %+v, %v", e, err)
	}
	changed, _, err := s.EndpointChanges(ctx, 2)
	if err != nil || len(changed) != 3 {
		t.Fatalf("EndpointChanges(2) after the upgrade = %+v, %v; want every endpoint, re-keyed", changed, err)
	}
	for _, id := range []string{"sub_v7a", "sub_v7b", "sub_v7pull"} {
		if sub, err := s.GetSubscription(ctx, id); err != nil || sub.Delivery.DeadLetterURL == "" {
			t.Fatalf("subscription %s after the upgrade: %+v, %v; want its dead-letter URL kept", id, sub, err)
		}
	}
	for id, want := range map[string]delivery.Status{"dlv_v7_pending": delivery.StatusPending, "dlv_v7_dead": delivery.StatusDeadLettered} {
		if d, err := s.GetDelivery(ctx, id); err != nil || d.Status != want || d.DeadLetterOf != "" {
			t.Fatalf("delivery %s after the upgrade: %+v, %v; want %s, the dead letter of none", id, d, err, want)
		}
	}
	checkV7DeadLetter(t, s, v7, dlEp, now)
	checkV7EndpointsGo(t, s, dlEp, shared, now)
}

// checkV7DeadLetter: a dead letter of V7Data's subscription sub_v7a (on
// endpoint v7) is written to its dead-letter URL's endpoint dlEp, claimed
// with the dead-lettered delivery and its event, and recorded.
func checkV7DeadLetter(t *testing.T, s store.Store, v7, dlEp string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	lease := store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)}
	cs, err := s.ClaimDue(ctx, v7, now, 10, lease)
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v7_pending" || cs[0].DeadLetter != nil {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	o := deadLettered("dlv_v7_pending", 1, now, now)
	o.LeaseOwner = lease.Owner
	o.DeadLetterCopy = &store.NewDelivery{ID: "dlv_v7_copy", SubscriptionID: "sub_v7a", EndpointID: dlEp}
	if _, err := s.Record(ctx, []store.Outcome{o}); err != nil {
		t.Fatal(err)
	}
	end := attemptDue(o)
	cs, err = s.ClaimDue(ctx, dlEp, end, 10, lease)
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v7_copy" || cs[0].DeadLetterOf != "dlv_v7_pending" ||
		cs[0].DeadLetter == nil || cs[0].DeadLetter.DeadLetterReason != "NonRetriableStatus" ||
		string(cs[0].Payload) != `{"specversion":"1.0","id":"e1"}` {
		t.Fatalf("ClaimDue of the dead letter after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded("dlv_v7_copy", 1, end)}); err != nil {
		t.Fatal(err)
	}
}

// checkV7EndpointsGo: the endpoint rows of V7Data's dead-letter URLs (dlEp
// and shared, which a subscription also pushes to) go with the last
// subscription that names them.
func checkV7EndpointsGo(t *testing.T, s store.Store, dlEp, shared string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	sub, err := s.GetSubscription(ctx, "sub_v7b")
	if err != nil {
		t.Fatal(err)
	}
	sub.Delivery.DeadLetterURL, sub.UpdatedAt = "", now
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpoint(ctx, shared); err != nil {
		t.Fatalf("endpoint of a URL still used after its dead-letter use ended: %v", err)
	}
	sub, err = s.GetSubscription(ctx, "sub_v7a")
	if err != nil {
		t.Fatal(err)
	}
	sub.Delivery.DeadLetterURL, sub.UpdatedAt = "", now
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpoint(ctx, dlEp); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(%s) after its URL was no longer named: %v; want ErrNotFound", dlEp, err)
	}
	if err := s.DeleteSubscription(ctx, "sub_v7b", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpoint(ctx, shared); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(%s) after its subscription was deleted: %v; want ErrNotFound", shared, err)
	}
}

// V8Data is written into a database at schema version 8, before content
// filters: a push subscription with delivery options naming a dead-letter
// URL (its endpoint ep_n0jm…, the ID schema 8 made of
// https://dl.v8.example/hook), whose dead-lettered delivery has a pending
// dead letter on that endpoint, and a pull subscription.
const V8Data = `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v8', 'acc_default', 'https://v8.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1),
       ('ep_n0jm21krfnc98k5a5964', 'acc_default', 'https://dl.v8.example/hook', 'enabled', 0, 0, 0, 1767603600000, 2);
UPDATE counters SET value = 2 WHERE name = 'endpoints';
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, created_at, updated_at, version)
VALUES ('sub_v8', 'acc_default', 'v8', 'https://v8.example/hook', 'ep_v8', '["invoice.paid"]', 'Invoices/', '.JSON',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry',
	'{"schema":"eventgrid","dead_letter_url":"https://dl.v8.example/hook"}', 'ep_n0jm21krfnc98k5a5964',
	1767603600000, 1767603600000, 2),
       ('sub_v8pull', 'acc_default', 'v8-pull', '', '', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'pull', 'retry', '{}', '',
	1767603600000, 1767603600000, 3);
UPDATE counters SET value = 3 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', 'Invoices/1.JSON', 1767603600000, '{"specversion":"1.0","id":"e1"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_status_code, last_outcome, dead_letter_reason, dead_letter_of)
VALUES ('dlv_v8_dead', 'acc_default', 'sub_v8', 'ep_v8', (SELECT seq FROM events WHERE id = 'e1'), 'dead_lettered', 3,
	1767603600000, 0, 1767603600000, 1767603650000, 400, 'http_400', 'NonRetriableStatus', ''),
       ('dlv_v8_copy', 'acc_default', 'sub_v8', 'ep_n0jm21krfnc98k5a5964', (SELECT seq FROM events WHERE id = 'e1'), 'pending', 0,
	1767603650000, 1767603650000, 1767603650000, 0, 0, '', '', 'dlv_v8_dead');
`

// CheckUpgradeFromV8 checks a store opened on a version-8 database holding
// V8Data: both subscriptions, read alone and by the catalog, have no
// content filters and keep the rest (the delivery options and dead-letter
// URL); the pending dead letter is still claimed on its endpoint; and
// filters written after the upgrade read back as written (Advanced byte for
// byte), and are cleared again.
func CheckUpgradeFromV8(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	const dlURL = "https://dl.v8.example/hook"
	if legacy := sqlrow.LegacyEndpointID("", dlURL); legacy != "ep_n0jm21krfnc98k5a5964" {
		t.Fatalf("V8Data names %s's endpoint ep_n0jm21krfnc98k5a5964; it is %s", dlURL, legacy)
	}
	dlEp := endpointOf(s, dlURL)
	for _, sub := range catalogAfterUpgrade(t, s, 2) {
		equal(t, "filters of "+sub.ID+" after the upgrade", sub.Filters, subscription.FilterOptions{})
	}
	sub, err := s.GetSubscription(ctx, "sub_v8")
	if err != nil || sub.Delivery.DeadLetterURL != dlURL || sub.Delivery.Schema != "eventgrid" ||
		sub.SubjectBeginsWith != "Invoices/" || sub.SubjectEndsWith != ".JSON" ||
		sub.EndpointID != endpointOf(s, "https://v8.example/hook") || sub.DeadLetterEndpointID != dlEp {
		t.Fatalf("sub_v8 after the upgrade: %+v, %v", sub, err)
	}
	cs, err := s.ClaimDue(ctx, dlEp, now, 10, store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)})
	if err != nil || len(cs) != 1 || cs[0].ID != "dlv_v8_copy" || cs[0].DeadLetterOf != "dlv_v8_dead" ||
		cs[0].DeadLetter == nil || cs[0].DeadLetter.DeadLetterReason != "NonRetriableStatus" {
		t.Fatalf("ClaimDue of the dead letter after the upgrade: %+v, %v", cs, err)
	}

	// Filters written after the upgrade read back, alone and in the catalog.
	const advanced = `[{"operator_type": "StringIn", "key": "data.region",  "values": ["eu<1>", "us & ca"]}]`
	for _, w := range []struct {
		id string
		f  subscription.FilterOptions
	}{
		{"sub_v8", subscription.FilterOptions{Advanced: json.RawMessage(advanced), SubjectCaseSensitive: true}},
		{"sub_v8pull", subscription.FilterOptions{SubjectCaseSensitive: true}},
	} {
		id, f := w.id, w.f
		sub, err := s.GetSubscription(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before, err := s.SubscriptionChanges(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		sub.Filters, sub.UpdatedAt = f, now
		if err := s.UpdateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetSubscription(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sub.Version = got.Version
		equal(t, "subscription "+id+" after filters were set", got, sub)
		if string(got.Filters.Advanced) != string(f.Advanced) {
			t.Fatalf("advanced filters of %s read back as %s; want %s", id, got.Filters.Advanced, f.Advanced)
		}
		ch, err := s.SubscriptionChanges(ctx, before.Version)
		if err != nil || len(ch.Changed) != 1 {
			t.Fatalf("SubscriptionChanges after filters were set: %+v, %v", ch, err)
		}
		equal(t, "subscription "+id+" in the catalog after filters were set", ch.Changed[0], sub)
	}
	if _, err := s.GetEndpoint(ctx, dlEp); err != nil {
		t.Fatalf("dead-letter endpoint after filters were set: %v", err)
	}
	// And cleared.
	sub, err = s.GetSubscription(ctx, "sub_v8")
	if err != nil {
		t.Fatal(err)
	}
	sub.Filters = subscription.FilterOptions{}
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetSubscription(ctx, "sub_v8"); err != nil || got.Filters.Advanced != nil || got.Filters.SubjectCaseSensitive {
		t.Fatalf("filters after they were cleared: %+v, %v", got.Filters, err)
	}
}

// V9Data is written into a database at schema version 9, whose indexes of
// deliveries by status (deliveries_subscription_status,
// deliveries_account_status) held every delivery: a push subscription
// sub_v9 with a delivery of each status but queued (two delivered), and a
// pull subscription with a queued one. Their IDs sort in the order listed.
const V9Data = `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_v9', 'acc_default', 'https://v9.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version)
VALUES ('sub_v9', 'acc_default', 'v9', 'https://v9.example/hook', 'ep_v9', '["invoice.paid"]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry', '{}', '', '{}',
	1767603600000, 1767603600000, 2),
       ('sub_v9pull', 'acc_default', 'v9-pull', '', '', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'pull', 'retry', '{}', '', '{}',
	1767603600000, 1767603600000, 3);
UPDATE counters SET value = 3 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('acc_default', 'e2', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e2"}'),
       ('acc_default', 'e3', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e3"}'),
       ('acc_default', 'e4', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e4"}'),
       ('acc_default', 'e5', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e5"}'),
       ('acc_default', 'e6', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e6"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_status_code, last_outcome, dead_letter_reason, delivered_at)
VALUES ('dlv_000000000000000000000v9001', 'acc_default', 'sub_v9', 'ep_v9', (SELECT seq FROM events WHERE id = 'e1'),
	'delivered', 1, 1767603600000, 1767603600000, 1767603600000, 1767603610000, 200, 'http_200', '', 1767603611000),
       ('dlv_000000000000000000000v9002', 'acc_default', 'sub_v9', 'ep_v9', (SELECT seq FROM events WHERE id = 'e2'),
	'dead_lettered', 3, 1767603600000, 0, 1767603600000, 1767603650000, 400, 'http_400', 'NonRetriableStatus', 0),
       ('dlv_000000000000000000000v9003', 'acc_default', 'sub_v9', 'ep_v9', (SELECT seq FROM events WHERE id = 'e3'),
	'dropped', 0, 1767603600000, 1767603600000, 1767603600000, 0, 0, '', 'SubscriptionDeleted', 0),
       ('dlv_000000000000000000000v9004', 'acc_default', 'sub_v9', 'ep_v9', (SELECT seq FROM events WHERE id = 'e4'),
	'pending', 0, 1767603600000, 1767603600000, 1767603600000, 0, 0, '', '', 0),
       ('dlv_000000000000000000000v9005', 'acc_default', 'sub_v9', 'ep_v9', (SELECT seq FROM events WHERE id = 'e5'),
	'delivered', 1, 1767603600000, 1767603600000, 1767603600000, 1767603620000, 200, 'http_200', '', 1767603621000),
       ('dlv_000000000000000000000v9006', 'acc_default', 'sub_v9pull', '', (SELECT seq FROM events WHERE id = 'e6'),
	'queued', 0, 1767603600000, 1767603600000, 1767603600000, 0, 0, '', '', 0);
`

// CheckUpgradeFromV9 checks a store opened on a version-9 database holding
// V9Data, whose indexes by status now leave delivered deliveries out: every
// list by status, of the subscription and of the account, finds exactly its
// deliveries, newest first, page by page; and deliveries that change status
// afterwards (delivered, redriven, dead-lettered again) move between the
// lists.
func CheckUpgradeFromV9(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	const (
		d1, d2, d3 = "dlv_000000000000000000000v9001", "dlv_000000000000000000000v9002", "dlv_000000000000000000000v9003"
		d4, d5, d6 = "dlv_000000000000000000000v9004", "dlv_000000000000000000000v9005", "dlv_000000000000000000000v9006"
	)
	// list reads every page of a list by status, one delivery a page, and
	// checks it against want (newest first).
	list := func(what string, f store.DeliveryFilter, want ...string) {
		t.Helper()
		got := []string{}
		f.Page = store.Page{Limit: 1}
		for {
			ds, next, err := s.ListDeliveries(ctx, f)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got = append(got, deliveryIDs(ds)...)
			if next == "" || len(got) > len(want) {
				break
			}
			f.Page.Cursor = next
		}
		equal(t, what, got, append([]string{}, want...))
	}
	lists := func(when string, want map[delivery.Status][]string) {
		t.Helper()
		for _, st := range []delivery.Status{delivery.StatusPending, delivery.StatusDelivered, delivery.StatusDeadLettered,
			delivery.StatusDropped, delivery.StatusQueued} {
			sub := "sub_v9"
			if st == delivery.StatusQueued {
				sub = "sub_v9pull"
			}
			list(fmt.Sprintf("%s deliveries of %s %s", st, sub, when), store.DeliveryFilter{SubscriptionID: sub, Status: st}, want[st]...)
			list(fmt.Sprintf("%s deliveries of %s in its account %s", st, sub, when),
				store.DeliveryFilter{AccountID: account.DefaultID, SubscriptionID: sub, Status: st}, want[st]...)
			list(fmt.Sprintf("%s deliveries of the account %s", st, when),
				store.DeliveryFilter{AccountID: account.DefaultID, Status: st}, want[st]...)
		}
		for _, f := range []store.DeadLetterFilter{{SubscriptionID: "sub_v9"}, {AccountID: account.DefaultID}} {
			dls, _, err := s.ListDeadLetters(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, dl := range dls {
				got = append(got, dl.ID)
			}
			equal(t, fmt.Sprintf("dead letters (%+v) %s", f, when), got, append([]string{}, want[delivery.StatusDeadLettered]...))
		}
	}
	lists("after the upgrade", map[delivery.Status][]string{
		delivery.StatusPending: {d4}, delivery.StatusDelivered: {d5, d1}, delivery.StatusDeadLettered: {d2},
		delivery.StatusDropped: {d3}, delivery.StatusQueued: {d6},
	})
	list("deliveries of sub_v9 after the upgrade", store.DeliveryFilter{SubscriptionID: "sub_v9"}, d5, d4, d3, d2, d1)

	// The pending delivery ends delivered; the dead letter is redriven.
	lease := store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)}
	ep := endpointOf(s, "https://v9.example/hook")
	cs, err := s.ClaimDue(ctx, ep, now, 10, lease)
	if err != nil || len(cs) != 1 || cs[0].ID != d4 {
		t.Fatalf("ClaimDue after the upgrade: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{succeeded(d4, 1, now)}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Redrive(ctx, "sub_v9", nil, now); err != nil || res.Count != 1 {
		t.Fatalf("Redrive after the upgrade: %+v, %v; want 1 redriven", res, err)
	}
	lists("after a delivery and a redrive", map[delivery.Status][]string{
		delivery.StatusPending: {d2}, delivery.StatusDelivered: {d5, d4, d1},
		delivery.StatusDropped: {d3}, delivery.StatusQueued: {d6},
	})
	// The redriven delivery is dead-lettered again.
	later := now.Add(time.Minute)
	cs, err = s.ClaimDue(ctx, ep, later, 10, lease)
	if err != nil || len(cs) != 1 || cs[0].ID != d2 {
		t.Fatalf("ClaimDue of the redriven delivery: %+v, %v", cs, err)
	}
	if _, err := s.Record(ctx, []store.Outcome{deadLettered(d2, 4, later, later)}); err != nil {
		t.Fatal(err)
	}
	lists("after the redriven delivery was dead-lettered again", map[delivery.Status][]string{
		delivery.StatusDelivered: {d5, d4, d1}, delivery.StatusDeadLettered: {d2},
		delivery.StatusDropped: {d3}, delivery.StatusQueued: {d6},
	})
}

// V10Data is written into a database at schema version 10, whose endpoint
// IDs were unkeyed hashes of the account and URL (sqlrow.LegacyEndpointID):
// sub_v10 pushes to a URL with a password (its endpoint disabled) and
// names a dead-letter URL; sub_v10x, in another account, pushes to the same
// URL; a pull subscription. Deliveries: a pending one and a dead-lettered
// one (its attempt error quoting the URL with its password, as releases
// before schema 11 logged it) whose dead letter is pending on the
// dead-letter endpoint; a pending one of sub_v10x; a queued one; the
// delivered delivery of an operational event naming sub_v10's endpoint;
// and the delivered delivery, on an endpoint that no longer exists, of
// an operational event naming that endpoint.
const V10Data = `
INSERT INTO accounts (id, name, settings, created_at, updated_at)
VALUES ('acc_0000000000000000000000v10x', 'v10x', '{"failure_policy":"retry"}', 1767603600000, 1767603600000);
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_80xd22q4hn06sbmty17h', 'acc_default', 'https://usr:pw10@v10.example/hook', 'disabled', 7, 1767603600000,
	1767604200000, 1767603600000, 2),
       ('ep_6wpaegxqj598vbhvcbhr', 'acc_0000000000000000000000v10x', 'https://usr:pw10@v10.example/hook', 'enabled', 0, 0, 0,
	1767603600000, 1),
       ('ep_ch5wcgq0tbze3sph9m56', 'acc_default', 'https://dl.v10.example/hook', 'enabled', 0, 0, 0, 1767603600000, 1);
UPDATE counters SET value = 2 WHERE name = 'endpoints';
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version)
VALUES ('sub_v10', 'acc_default', 'v10', 'https://usr:pw10@v10.example/hook', 'ep_80xd22q4hn06sbmty17h', '["invoice.paid"]',
	'', '', '{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry',
	'{"dead_letter_url":"https://dl.v10.example/hook"}', 'ep_ch5wcgq0tbze3sph9m56', '{}', 1767603600000, 1767603600000, 2),
       ('sub_v10x', 'acc_0000000000000000000000v10x', 'v10x', 'https://usr:pw10@v10.example/hook', 'ep_6wpaegxqj598vbhvcbhr',
	'[]', '', '', '{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'push', 'retry', '{}', '', '{}',
	1767603600000, 1767603600000, 3),
       ('sub_v10pull', 'acc_default', 'v10-pull', '', '', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'active', 'pull', 'retry', '{}', '', '{}',
	1767603600000, 1767603600000, 4);
UPDATE counters SET value = 4 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('acc_default', 'e2', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e2"}'),
       ('acc_0000000000000000000000v10x', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}'),
       ('acc_default', 'evt_v10_ops', '/herald', 'herald.endpoint.disabled', 'https://usr:xxxxx@v10.example/hook', 1767603600000,
	'{"specversion":"1.0","id":"evt_v10_ops","data":{"endpoint_id":"ep_80xd22q4hn06sbmty17h","url":"https://usr:xxxxx@v10.example/hook"}}'),
       ('acc_default', 'evt_v10_gone', '/herald', 'herald.delivery.dead_lettered', 'dlv_v10_gone', 1767603600000,
	'{"specversion":"1.0","id":"evt_v10_gone","data":{"endpoint_id":"ep_9az7tjv6v7dr2hnwx6rs"}}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_outcome, dead_letter_reason, dead_letter_of, delivered_at)
VALUES ('dlv_v10_pending', 'acc_default', 'sub_v10', 'ep_80xd22q4hn06sbmty17h',
	(SELECT seq FROM events WHERE id = 'e1' AND account_id = 'acc_default'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0),
       ('dlv_v10_dead', 'acc_default', 'sub_v10', 'ep_80xd22q4hn06sbmty17h',
	(SELECT seq FROM events WHERE id = 'e2'), 'dead_lettered', 1,
	1767603600000, 0, 1767603600000, 1767603600000, 'connection_refused', 'MaxDeliveryAttemptsExceeded', '', 0),
       ('dlv_v10_copy', 'acc_default', 'sub_v10', 'ep_ch5wcgq0tbze3sph9m56',
	(SELECT seq FROM events WHERE id = 'e2'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0, '', '', 'dlv_v10_dead', 0),
       ('dlv_v10x', 'acc_0000000000000000000000v10x', 'sub_v10x', 'ep_6wpaegxqj598vbhvcbhr',
	(SELECT seq FROM events WHERE id = 'e1' AND account_id = 'acc_0000000000000000000000v10x'), 'pending', 0,
	1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0),
       ('dlv_v10_queued', 'acc_default', 'sub_v10pull', '',
	(SELECT seq FROM events WHERE id = 'e1' AND account_id = 'acc_default'), 'queued', 0,
	1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0),
       ('dlv_v10_ops', 'acc_default', 'sub_v10', 'ep_80xd22q4hn06sbmty17h',
	(SELECT seq FROM events WHERE id = 'evt_v10_ops'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603600000, 'http_200', '', '', 1767603601000),
       ('dlv_v10_gone', 'acc_default', 'sub_gone', 'ep_9az7tjv6v7dr2hnwx6rs',
	(SELECT seq FROM events WHERE id = 'evt_v10_gone'), 'delivered', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603600000, 'http_200', '', '', 1767603601000);
INSERT INTO attempts (delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
VALUES ('dlv_v10_dead', 1, 1767603600000, 1000, 0, 'connection_refused',
	'Post "https://usr:pw10@v10.example/hook": dial tcp 127.0.0.1:9: connect: connection refused', NULL);
`

// CheckUpgradeFromV10 checks a store opened on a version-10 database
// holding V10Data: every endpoint ID is now the store's keyed one
// (store.Store.EndpointID) and none of the old ones is left; each endpoint
// keeps its URL, account and health; the subscriptions and deliveries name
// the endpoints they named (the same URL in two accounts, two endpoints;
// the dead-letter endpoint), and are claimed there; the delivery of an
// endpoint gone has a new ID of its own; the operational events name the
// new IDs; the attempt log no longer shows the password; and a write after
// the upgrade moves the subscription to its new URL's keyed endpoint.
func CheckUpgradeFromV10(t *testing.T, s store.Store) {
	t.Helper()
	now := time.UnixMilli(1767603700000).UTC()
	for old, of := range map[string][2]string{v10Legacy[0]: {"", v10URL}, v10Legacy[1]: {v10Account, v10URL},
		v10Legacy[2]: {"", v10DeadLetterURL}, v10Legacy[3]: {"", v10GoneURL}} {
		if got := sqlrow.LegacyEndpointID(of[0], of[1]); got != old {
			t.Fatalf("V10Data names the endpoint of %v %s; it is %s", of, old, got)
		}
	}
	e := v10Endpoints{ep: endpointOf(s, v10URL), epX: s.EndpointID(v10Account, v10URL), dlEp: endpointOf(s, v10DeadLetterURL)}
	for _, id := range []string{e.ep, e.epX, e.dlEp} {
		if slices.Contains(v10Legacy, id) {
			t.Fatalf("the store makes the old ID %s", id)
		}
	}
	if e.ep == e.epX {
		t.Fatalf("one URL in two accounts is one endpoint %s", e.ep)
	}
	checkV10Endpoints(t, s, e)
	checkV10References(t, s, e)
	checkV10Claims(t, s, e, now)
	checkV10Move(t, s, e, now)
}

// V10Data's URLs, and the second account it pushes to v10URL in.
const (
	v10URL, v10DeadLetterURL, v10GoneURL = "https://usr:pw10@v10.example/hook", "https://dl.v10.example/hook", "https://gone.v10.example/hook"
	v10Account                           = "acc_0000000000000000000000v10x"
)

// v10Legacy are the endpoint IDs schema 10 made of V10Data's URLs: of
// v10URL in the default account and in v10Account, of v10DeadLetterURL, of
// v10GoneURL.
var v10Legacy = []string{"ep_80xd22q4hn06sbmty17h", "ep_6wpaegxqj598vbhvcbhr", "ep_ch5wcgq0tbze3sph9m56", "ep_9az7tjv6v7dr2hnwx6rs"}

// v10Endpoints are the store's endpoint IDs of V10Data's URLs: v10URL in
// the default account and in v10Account, and the dead-letter URL.
type v10Endpoints struct{ ep, epX, dlEp string }

// checkV10Endpoints: the upgraded endpoints are those three, each with its
// URL, account and health, re-keyed at a new version.
func checkV10Endpoints(t *testing.T, s store.Store, e v10Endpoints) {
	t.Helper()
	ctx := context.Background()
	ep, epX, dlEp, url, dlURL, x := e.ep, e.epX, e.dlEp, v10URL, v10DeadLetterURL, v10Account
	eps, err := s.AllEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, row := range eps {
		ids = append(ids, row.ID)
	}
	equal(t, "endpoints after the upgrade", ids, sortedCopy([]string{ep, epX, dlEp}))
	for id, want := range map[string]struct {
		account, url string
		state        health.State
		failures     int64
	}{ep: {account.DefaultID, url, health.Disabled, 7}, epX: {x, url, health.Enabled, 0}, dlEp: {account.DefaultID, dlURL, health.Enabled, 0}} {
		got, err := s.GetEndpoint(ctx, id)
		if err != nil || got.AccountID != want.account || got.URL != want.url || got.Health.State != want.state ||
			got.Health.ConsecutiveFailures != want.failures || got.Version <= 2 {
			t.Fatalf("endpoint %s after the upgrade: %+v, %v; want %+v, re-keyed at a version after 2", id, got, err, want)
		}
	}
	if got, _ := s.GetEndpoint(ctx, ep); !got.Health.NextProbeAt.Equal(time.UnixMilli(1767604200000)) {
		t.Fatalf("the disabled endpoint's next probe after the upgrade: %v", got.Health.NextProbeAt)
	}
}

// checkV10References: the subscriptions and deliveries name the
// endpoints they named; the delivery of an endpoint gone has a new ID of
// its own; the operational events name the new IDs; the attempt log no
// longer shows the password.
func checkV10References(t *testing.T, s store.Store, e v10Endpoints) {
	t.Helper()
	ctx := context.Background()
	ep, epX, dlEp := e.ep, e.epX, e.dlEp
	for _, sub := range catalogAfterUpgrade(t, s, 3) {
		want := map[string][2]string{"sub_v10": {ep, dlEp}, "sub_v10x": {epX, ""}, "sub_v10pull": {"", ""}}[sub.ID]
		if sub.EndpointID != want[0] || sub.DeadLetterEndpointID != want[1] {
			t.Fatalf("subscription %s after the upgrade on %q and %q; want %q and %q", sub.ID, sub.EndpointID,
				sub.DeadLetterEndpointID, want[0], want[1])
		}
	}
	for id, want := range map[string]string{"dlv_v10_pending": ep, "dlv_v10_dead": ep, "dlv_v10_copy": dlEp, "dlv_v10x": epX,
		"dlv_v10_queued": "", "dlv_v10_ops": ep} {
		if d, err := s.GetDelivery(ctx, id); err != nil || d.EndpointID != want {
			t.Fatalf("delivery %s after the upgrade: %+v, %v; want it on %q", id, d, err, want)
		}
	}
	gone, err := s.GetDelivery(ctx, "dlv_v10_gone")
	if err != nil {
		t.Fatal(err)
	}
	orphanID(t, gone.ID, gone.EndpointID, v10Legacy[3], ep, epX, dlEp)

	// The operational events name the new IDs.
	for delivery, want := range map[string][2]string{"dlv_v10_ops": {ep, v10Legacy[0]}, "dlv_v10_gone": {gone.EndpointID, v10Legacy[3]}} {
		d, err := s.GetDelivery(ctx, delivery)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.GetEvent(ctx, d.EventSeq)
		if err != nil || !strings.Contains(string(ev.Payload), `"endpoint_id":"`+want[0]+`"`) || strings.Contains(string(ev.Payload), want[1]) {
			t.Fatalf("the operational event of %s after the upgrade: %s, %v; want it to name %s, not %s", delivery, ev.Payload, err, want[0], want[1])
		}
	}
	// The attempt log shows no password.
	as, _, err := s.ListAttempts(ctx, "dlv_v10_dead", store.Page{})
	if want := `Post "https://usr:xxxxx@v10.example/hook": dial tcp 127.0.0.1:9: connect: connection refused`; err != nil ||
		len(as) != 1 || as[0].Error != want {
		t.Fatalf("the attempt log after the upgrade: %+v, %v; want the error %s", as, err, want)
	}
}

// checkV10Claims: the deliveries are claimed on the new IDs, and none of
// the old is left.
func checkV10Claims(t *testing.T, s store.Store, e v10Endpoints, now time.Time) {
	t.Helper()
	ctx := context.Background()
	lease := store.Lease{Owner: "upgrade", Until: now.Add(time.Hour)}
	for id, want := range map[string]string{e.ep: "dlv_v10_pending", e.dlEp: "dlv_v10_copy", e.epX: "dlv_v10x"} {
		cs, err := s.ClaimDue(ctx, id, now, 10, lease)
		if err != nil || len(cs) != 1 || cs[0].ID != want {
			t.Fatalf("ClaimDue(%s) after the upgrade: %+v, %v; want %s", id, cs, err, want)
		}
	}
	for _, old := range v10Legacy {
		if _, err := s.GetEndpoint(ctx, old); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetEndpoint(%s), an old ID, after the upgrade: %v; want ErrNotFound", old, err)
		}
	}
}

// checkV10Move: a subscription write after the upgrade keys its new URL's
// endpoint, and the old endpoint goes.
func checkV10Move(t *testing.T, s store.Store, e v10Endpoints, now time.Time) {
	t.Helper()
	ctx := context.Background()
	sub, err := s.GetSubscription(ctx, "sub_v10")
	if err != nil {
		t.Fatal(err)
	}
	const movedURL = "https://usr:pw10@moved.v10.example/hook"
	sub.URL, sub.UpdatedAt = movedURL, now
	if err := s.UpdateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	moved := endpointOf(s, movedURL)
	if got, err := s.GetSubscription(ctx, "sub_v10"); err != nil || got.EndpointID != moved {
		t.Fatalf("sub_v10 after its URL changed: %+v, %v; want it on %s", got, err, moved)
	}
	if _, err := s.GetEndpoint(ctx, moved); err != nil {
		t.Fatalf("the new URL's endpoint %s: %v", moved, err)
	}
	if _, err := s.GetEndpoint(ctx, e.ep); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(%s) after its subscription moved: %v; want ErrNotFound", e.ep, err)
	}
}
