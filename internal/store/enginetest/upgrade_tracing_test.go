package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// TracingFrom is the schema version before the one that added events'
// trace contexts (0019_trace_context.sql): RunUpgrades opens TracingData
// written at it.
const TracingFrom = 18

// TracingData is written into a database at schema version TracingFrom:
// JobsData, and an event of the account published before the upgrade
// with a pending delivery (its trace_context NULL after it).
const TracingData = JobsData + `
INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES ('acc_000000000000000000000sess', 'e18', '/billing', 'invoice.paid', '', 1767603600000, '{"specversion":"1.0","id":"e18"}');
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, round_start,
	next_attempt_at, created_at, last_attempt_at, last_outcome, dead_letter_reason, dead_letter_of, delivered_at)
VALUES ('dlv_v18_pending', 'acc_000000000000000000000sess', 'sub_v18', 'ep_v18', (SELECT seq FROM events WHERE id = 'e18'),
	'pending', 0, 1767603600000, 1767603600000, 1767603600000, 0, '', '', '', 0);
`

// CheckTracingUpgrade checks a store opened on a database at TracingFrom
// holding TracingData: the delivery of the event published before the
// upgrade is claimed without a trace context, and events published after
// it keep theirs (or none) through their claims.
func CheckTracingUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	old := b.claim("ep_v18", time.UnixMilli(1767603700000), 10)
	if len(old) != 1 || old[0].ID != "dlv_v18_pending" || old[0].TraceContext != "" || string(old[0].Payload) != `{"specversion":"1.0","id":"e18"}` {
		t.Fatalf("the delivery published before the upgrade: %+v; want dlv_v18_pending without a trace context", old)
	}
	sub := b.subIn("acc_000000000000000000000sess", "https://upgraded.example/hook")
	traced, plain := b.event(b.now, sub), b.event(b.at(time.Second), sub)
	traced.TraceContext = traceContextB
	b.publish(traced, plain)
	got := b.claim(sub.EndpointID, b.at(time.Minute), 10)
	equal(t, "claimed after the upgrade", claimedIDs(got), []string{traced.Deliveries[0].ID, plain.Deliveries[0].ID})
	equal(t, "trace contexts after the upgrade", []string{got[0].TraceContext, got[1].TraceContext}, []string{traceContextB, ""})
}
