package enginetest

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

func changes(b *bundle, since int64) store.CatalogChanges {
	b.t.Helper()
	c, err := b.s.SubscriptionChanges(b.ctx, since)
	if err != nil {
		b.t.Fatalf("SubscriptionChanges(%d): %v", since, err)
	}
	return c
}

func subIDs(subs []subscription.Subscription) []string {
	var out []string
	for _, s := range subs {
		out = append(out, s.ID)
	}
	return out
}

func testCatalogChanges(t *testing.T, b *bundle) {
	v0 := changes(b, 0)
	if !v0.Full || len(v0.Changed) != 0 || v0.Version <= 0 {
		t.Fatalf("empty store: %+v; want full, no subscriptions, a positive version", v0)
	}
	if again := changes(b, v0.Version); again.Full || len(again.Changed)+len(again.Deleted) != 0 || again.Version != v0.Version {
		t.Fatalf("no change since %d: %+v", v0.Version, again)
	}
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	v1 := changes(b, v0.Version)
	if v1.Full || v1.Version != v0.Version+2 {
		t.Fatalf("after two creates: version %d full %v; want %d, incremental", v1.Version, v1.Full, v0.Version+2)
	}
	equal(t, "created", subIDs(v1.Changed), []string{a.ID, c.ID})

	a.EventTypes = []string{"invoice.voided"}
	if err := b.s.UpdateSubscription(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := b.s.DeleteSubscription(b.ctx, c.ID, b.now); err != nil {
		t.Fatal(err)
	}
	v2 := changes(b, v1.Version)
	if v2.Version != v1.Version+2 {
		t.Fatalf("after an update and a delete: version %d, want %d", v2.Version, v1.Version+2)
	}
	equal(t, "changed", subIDs(v2.Changed), []string{a.ID})
	equal(t, "changed types", v2.Changed[0].EventTypes, []string{"invoice.voided"})
	equal(t, "deleted", v2.Deleted, []string{c.ID})
	// A reader between the two writes sees only the second.
	mid := changes(b, v1.Version+1)
	if len(mid.Changed) != 0 {
		t.Fatalf("since %d: changed %v, want none", v1.Version+1, subIDs(mid.Changed))
	}
	equal(t, "deleted since the update", mid.Deleted, []string{c.ID})
	// From scratch: only what exists.
	all := changes(b, 0)
	if !all.Full || len(all.Deleted) != 0 {
		t.Fatalf("since 0: %+v", all)
	}
	equal(t, "all", subIDs(all.Changed), []string{a.ID})
}

func testCleanupPrunesTombstones(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	v := changes(b, 0).Version
	if err := b.s.DeleteSubscription(b.ctx, c.ID, b.now); err != nil {
		t.Fatal(err)
	}
	// Not yet old enough: the deletion is still reported.
	if _, err := b.s.Cleanup(b.ctx, b.now, 100); err != nil {
		t.Fatal(err)
	}
	if got := changes(b, v); got.Full || len(got.Deleted) != 1 {
		t.Fatalf("before the retention: %+v; want the deletion", got)
	}
	if _, err := b.s.Cleanup(b.ctx, b.at(time.Millisecond), 100); err != nil {
		t.Fatal(err)
	}
	// A reader that may have missed the forgotten deletion reads everything.
	got := changes(b, v)
	if !got.Full || len(got.Deleted) != 0 {
		t.Fatalf("after the retention, since %d: %+v; want full", v, got)
	}
	equal(t, "all", subIDs(got.Changed), []string{a.ID})
	// A reader that had seen the deletion is not sent back to the start.
	if after := changes(b, got.Version); after.Full {
		t.Fatalf("since %d after pruning: %+v; want incremental", got.Version, after)
	}
}
