package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// V11Data is written into a database at schema version 11, which kept no
// reason for a state: the installation's endpoint key (32 bytes of text,
// which both stores take as the key's bytes) as the migration's Go step
// left it; v11URL's endpoint, disabled; sub_v11, a push subscription to it
// that Herald deactivated, with a queued delivery. CheckUpgradeFromV11
// then checks the store opened on it.
const V11Data = `
INSERT INTO installation_keys (name, key) VALUES ('endpoint_id', 'herald schema 11 endpoint key 32');
DROP TABLE endpoint_rekey;
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at,
	updated_at, version)
VALUES ('ep_9at9sx84a7ff0fdf5nd5', 'acc_default', 'https://v11.example/hook', 'disabled', 3, 1767603600000,
	1767604200000, 1767603600000, 1767603600000, 1);
UPDATE counters SET value = 1 WHERE name = 'endpoints';
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version)
VALUES ('sub_v11', 'acc_default', 'v11', 'https://v11.example/hook', 'ep_9at9sx84a7ff0fdf5nd5', '[]', '', '',
	'{"preset":"eventgrid"}', 30000, '{}', '{}', '', true, 'deactivated', 'push', 'queue', '{}', '', '{}',
	1767603600000, 1767603600000, 1);
UPDATE counters SET value = 1 WHERE name = 'catalog';
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_default', 'e1', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e1"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_outcome, dead_letter_reason, dead_letter_of, delivered_at)
VALUES ('dlv_v11_queued', 'acc_default', 'sub_v11', 'ep_9at9sx84a7ff0fdf5nd5',
	(SELECT seq FROM events WHERE id = 'e1'), 'queued', 1,
	1767603600000, 1767603600000, 1767603600000, 1767603600000, 'http_503', '', '', 0);
`

// v11URL is V11Data's URL, v11Endpoint the ID of its endpoint under
// V11Data's key.
const (
	v11URL      = "https://v11.example/hook"
	v11Endpoint = "ep_9at9sx84a7ff0fdf5nd5"
)

// CheckUpgradeFromV11 checks a store opened on a version-11 database
// holding V11Data: the endpoint and the subscription keep their states,
// with no reason (the API shows null); the endpoint's health is written
// and read back with its reason; reactivating the subscription writes its
// reason and moves its UpdatedAt, and pushes its queue; deactivating it by
// hand writes that reason.
func CheckUpgradeFromV11(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1767603700000).UTC()
	if got := endpointOf(s, v11URL); got != v11Endpoint {
		t.Fatalf("V11Data names the endpoint of %s %s; under its key it is %s", v11URL, v11Endpoint, got)
	}
	ep, err := s.GetEndpoint(ctx, v11Endpoint)
	if err != nil || ep.Health.State != health.Disabled || ep.Health.ConsecutiveFailures != 3 || ep.Health.Reason != "" {
		t.Fatalf("endpoint after the upgrade: %+v, %v; want disabled after 3 failures, no reason", ep, err)
	}
	written, err := s.ModifyEndpoints(ctx, []string{v11Endpoint}, func(eps []*endpoint.Endpoint) error {
		for _, e := range eps {
			health.DefaultConfig().Freeze(&e.Health, now)
			e.UpdatedAt = now
		}
		return nil
	})
	if err != nil || len(written) != 1 {
		t.Fatalf("ModifyEndpoints after the upgrade: %+v, %v", written, err)
	}
	if ep, err := s.GetEndpoint(ctx, v11Endpoint); err != nil || ep.Health.State != health.Frozen ||
		ep.Health.Reason != health.ReasonFrozenByHand || !ep.UpdatedAt.Equal(now) {
		t.Fatalf("endpoint frozen after the upgrade: %+v, %v", ep, err)
	}
	equal(t, "endpoint as ModifyEndpoints wrote it", written[0].Health.Reason, health.ReasonFrozenByHand)

	sub := catalogAfterUpgrade(t, s, 1)[0]
	if sub.State != subscription.StateDeactivated || sub.StateReason != "" || sub.AccountID != account.DefaultID {
		t.Fatalf("subscription after the upgrade: %+v; want deactivated, no reason", sub)
	}
	res, err := s.ReactivateSubscription(ctx, sub.ID, now, subscription.ReasonReactivatedByHand)
	if err != nil || res.Count != 1 {
		t.Fatalf("ReactivateSubscription after the upgrade: %+v, %v; want its queued delivery pending", res, err)
	}
	if got, err := s.GetSubscription(ctx, sub.ID); err != nil || got.State != subscription.StateActive ||
		got.StateReason != subscription.ReasonReactivatedByHand || !got.UpdatedAt.Equal(now) {
		t.Fatalf("reactivated subscription after the upgrade: %+v, %v", got, err)
	}
	if d, err := s.GetDelivery(ctx, "dlv_v11_queued"); err != nil || d.Status != delivery.StatusPending {
		t.Fatalf("the queued delivery after the reactivation: %+v, %v; want pending", d, err)
	}
	later := now.Add(time.Minute)
	if changed, err := s.DeactivateSubscription(ctx, sub.ID, later, subscription.ReasonDeactivatedByHand); err != nil || !changed {
		t.Fatalf("DeactivateSubscription after the upgrade: %v, %v", changed, err)
	}
	if got, err := s.GetSubscription(ctx, sub.ID); err != nil || got.State != subscription.StateDeactivated ||
		got.StateReason != subscription.ReasonDeactivatedByHand || !got.UpdatedAt.Equal(later) {
		t.Fatalf("deactivated subscription after the upgrade: %+v, %v", got, err)
	}
}
