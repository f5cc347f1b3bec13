package enginetest

import (
	"testing"

	"github.com/herald-events/herald/internal/store"
)

// SourcesFrom is the schema version before the one that added the broker
// sources (0024_sources.sql on both stores; 0023 is the destinations'):
// RunUpgrades opens SourcesData written at it.
const SourcesFrom = 23

// SourcesData is written into a database at schema version SourcesFrom:
// EventTypesData.
const SourcesData = EventTypesData

// CheckSourcesUpgrade checks a store opened on a database at SourcesFrom
// holding SourcesData: it holds no source, takes one (which reads back
// and lists), and the data written before is still there.
func CheckSourcesUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	b := setup(t, func(*testing.T) store.Store { return s })
	if all, err := s.AllSources(b.ctx); err != nil || len(all) != 0 {
		t.Fatalf("AllSources after the upgrade = %+v, %v; want none", all, err)
	}
	src := newSource(b, "orders")
	createSource(b, src)
	got, err := s.GetSource(b.ctx, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "the source created after the upgrade", got, src)
	if d, err := s.GetDelivery(b.ctx, "dlv_v20_fresh"); err != nil || d.AccountID != "acc_000000000000000000000sess" {
		t.Fatalf("a delivery written before the upgrade: %+v, %v", d, err)
	}
}
