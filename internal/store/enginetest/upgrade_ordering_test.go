package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// OrderingFrom is the schema version before the one that added ordering
// keys (0017_ordering.sql): RunUpgrades opens OrderingData written at it.
const OrderingFrom = 16

// OrderingData is written into a database at schema version OrderingFrom:
// as PortalSessionsData (nothing since changed what it writes), an account,
// its key and a console session.
const OrderingData = PortalSessionsData

// CheckOrderingUpgrade checks a store opened on a database at OrderingFrom
// holding OrderingData: deliveries of a subscription made in the account
// after the upgrade keep their ordering keys, one head per key is claimed
// and the next follows when it ends, and an unkeyed one is not held.
func CheckOrderingUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	sub := b.subIn("acc_000000000000000000000sess", "https://upgraded.example/hook")
	k1, k2, u := b.keyed(sub, "k", b.now), b.keyed(sub, "k", b.at(time.Second)), b.deliver(sub, b.at(2*time.Second))
	now := b.at(time.Minute)
	got := b.claim(sub.EndpointID, now, 10)
	equal(t, "claimed after the upgrade", claimedIDs(got), []string{k1, u})
	if got[0].OrderingKey != "k" {
		t.Fatalf("ordering key %q after the upgrade; want k", got[0].OrderingKey)
	}
	b.record(succeeded(k1, 1, now))
	equal(t, "the key's next", claimedIDs(b.claim(sub.EndpointID, now, 10)), []string{k2})
}
