package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// StatsFrom is the schema version before the one that made delivery_stats
// (0014_delivery_stats.sql): RunUpgrades opens StatsData written at it.
const StatsFrom = 13

// StatsData is written into a database at schema version StatsFrom: as
// ConsoleSessionsData (nothing since changed what it writes), an account
// and its key.
const StatsData = ConsoleSessionsData

// CheckStatsUpgrade checks a store opened on a database at StatsFrom
// holding StatsData: the account is kept, and outcomes recorded for a
// subscription made in it after the upgrade are counted and read back.
func CheckStatsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	sub := b.subIn("acc_000000000000000000000sess", "https://upgraded.example/hook")
	b.record(succeeded(b.deliver(sub, b.now), 1, b.now), deadLettered(b.deliver(sub, b.now), 1, b.now, b.now))
	minute := b.now.Truncate(time.Minute)
	got := countsOf(readStats(b, store.StatsQuery{AccountID: sub.AccountID, From: minute, Until: minute.Add(time.Minute), Step: time.Minute}))
	equal(t, "stats after the upgrade", got, []counts{{minute, 1, 1, 1, 2}})
	if n, err := s.DeleteOldStats(b.ctx, minute.Add(time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("DeleteOldStats after the upgrade = %d, %v; want 1", n, err)
	}
}
