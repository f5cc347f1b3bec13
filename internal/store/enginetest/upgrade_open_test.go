package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// OpenDeliveriesFrom is the schema version before the one that moved
// PostgreSQL's indexes of deliveries by state to open_deliveries
// (postgres/migrations/0021_open_deliveries.sql) and took SQLite's leased
// deliveries out of its status indexes
// (sqlite/migrations/0021_leased_apart.sql): RunUpgrades opens
// OpenDeliveriesData written at it.
const OpenDeliveriesFrom = 20

// OpenDeliveriesData is written into a database at schema version
// OpenDeliveriesFrom: JobTurnsData, and seven deliveries of the account
// acc_…sess's subscription sub_v20 on ep_v20, one of each state the
// indexes hold: fresh, a retry, two of the ordering key k (the first of
// them leased to a node that is gone), queued, dead-lettered, and one
// delivered, which none of them holds.
const OpenDeliveriesData = JobTurnsData + `
INSERT INTO events (account_id, id, source, type, subject, published_at, payload) VALUES
	('acc_000000000000000000000sess', 'e20a', '/billing', 'invoice.paid', '', 1767603600000, '{}'),
	('acc_000000000000000000000sess', 'e20b', '/billing', 'invoice.paid', '', 1767603600001, '{}'),
	('acc_000000000000000000000sess', 'e20c', '/billing', 'invoice.paid', '', 1767603600002, '{}'),
	('acc_000000000000000000000sess', 'e20d', '/billing', 'invoice.paid', '', 1767603600003, '{}'),
	('acc_000000000000000000000sess', 'e20e', '/billing', 'invoice.paid', '', 1767603600004, '{}'),
	('acc_000000000000000000000sess', 'e20f', '/billing', 'invoice.paid', '', 1767603600005, '{}'),
	('acc_000000000000000000000sess', 'e20g', '/billing', 'invoice.paid', '', 1767603600006, '{}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_outcome, dead_letter_reason, dead_letter_of, delivered_at,
	lease_owner, lease_until, ordering_key) VALUES
	('dlv_v20_fresh', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20a'),
		'pending', 0, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0, '', 0, NULL),
	('dlv_v20_retry', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20b'),
		'pending', 2, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0, '', 0, NULL),
	('dlv_v20_key1', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20c'),
		'pending', 0, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0, 'gone-node', 1767603660000, 'k'),
	('dlv_v20_key2', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20d'),
		'pending', 0, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0, '', 0, 'k'),
	('dlv_v20_queued', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20e'),
		'queued', 1, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0, '', 0, NULL),
	('dlv_v20_dead', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20f'),
		'dead_lettered', 3, 1767603600000, 1767603600000, 1767603600000, 0, '', 'MaxAttemptsExceeded', '', 0, '', 0, NULL),
	('dlv_v20_done', 'acc_000000000000000000000sess', 'sub_v20', 'ep_v20', (SELECT seq FROM events WHERE id = 'e20g'),
		'delivered', 1, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 1767603600500, '', 0, NULL);
`

// CheckOpenDeliveriesUpgrade checks a store opened on a database at
// OpenDeliveriesFrom holding OpenDeliveriesData: each list by state
// answers as before, the fresh delivery, the retry and the key's head
// (its lease, of a node gone, over) are claimed, and the key's next only
// once its head is delivered; a delivered one leaves the pending lists.
func CheckOpenDeliveriesUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	const acc = "acc_000000000000000000000sess"
	lists := func(when string, want map[delivery.Status][]string) {
		t.Helper()
		for st, ids := range want {
			for _, f := range []store.DeliveryFilter{{AccountID: acc, Status: st}, {AccountID: acc, SubscriptionID: "sub_v20", Status: st}} {
				f.Page.Limit = 100
				got, _, err := b.s.ListDeliveries(b.ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				var gotIDs []string
				for _, d := range got {
					if d.SubscriptionID == "sub_v20" {
						gotIDs = append(gotIDs, d.ID)
					}
				}
				equal(t, when+": "+string(st)+" deliveries of sub_v20", gotIDs, ids)
			}
		}
	}
	lists("after the upgrade", map[delivery.Status][]string{
		delivery.StatusPending:      {"dlv_v20_retry", "dlv_v20_key2", "dlv_v20_key1", "dlv_v20_fresh"},
		delivery.StatusQueued:       {"dlv_v20_queued"},
		delivery.StatusDeadLettered: {"dlv_v20_dead"},
		delivery.StatusDelivered:    {"dlv_v20_done"},
	})
	now := time.UnixMilli(1767607200000).UTC() // an hour on: the old lease is over
	equal(t, "claimed after the upgrade", claimedIDs(b.claim("ep_v20", now, 10)),
		[]string{"dlv_v20_fresh", "dlv_v20_key1", "dlv_v20_retry"})
	b.record(succeeded("dlv_v20_fresh", 1, now), succeeded("dlv_v20_key1", 1, now))
	equal(t, "the key's next", claimedIDs(b.claim("ep_v20", now, 10)), []string{"dlv_v20_key2"})
	lists("after two deliveries", map[delivery.Status][]string{
		delivery.StatusPending:   {"dlv_v20_retry", "dlv_v20_key2"},
		delivery.StatusDelivered: {"dlv_v20_key1", "dlv_v20_fresh", "dlv_v20_done"},
	})
}
