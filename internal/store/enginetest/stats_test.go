package enginetest

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// The per-minute delivery rollups (store.StatsStore), checked as part of
// the recording contract (RunRecordingContract): Record and Settle's
// acknowledgements add to them in their own transactions, counting only
// what applied; they add up across concurrent group commits; DeliveryStats
// reads them per step, by account, subscription and endpoint;
// DeleteOldStats prunes them, bounded.

// outcomeTook is o with its attempt lasting d.
func outcomeTook(o store.Outcome, d time.Duration) store.Outcome {
	o.Attempt.Duration = d
	return o
}

// readStats reads q's rows, failing the test on an error.
func readStats(b *bundle, q store.StatsQuery) []stats.Row {
	b.t.Helper()
	rows, err := b.s.DeliveryStats(b.ctx, q)
	if err != nil {
		b.t.Fatalf("DeliveryStats(%+v): %v", q, err)
	}
	return rows
}

// counts is a row's counts without its latency.
type counts struct {
	At                                        time.Time
	Delivered, Failed, DeadLettered, Attempts int64
}

func countsOf(rows []stats.Row) []counts {
	out := make([]counts, len(rows))
	for i, r := range rows {
		var n int64
		for _, c := range r.Latency {
			n += c
		}
		out[i] = counts{r.At.UTC(), r.Delivered, r.Failed, r.DeadLettered, n}
	}
	return out
}

// testStatsCounts: outcomes recorded by many concurrent Record calls (group
// commits of several calls each) add up per minute and per
// subscription/endpoint; an outcome whose state change does not apply (a
// stale lease owner) counts nothing; another account sees none of them.
func testStatsCounts(t *testing.T, b *bundle) {
	other := b.account("other")
	s1, s2 := b.sub("https://one.example/hook"), b.sub("https://two.example/hook")
	so := b.subIn(other.ID, "https://other.example/hook")
	minute := b.now.Truncate(time.Minute)
	const perWriter = 20
	var wg sync.WaitGroup
	for w, target := range []subscription.Subscription{s1, s2} {
		ids := make([]string, perWriter)
		for i := range ids {
			ids[i] = b.deliver(target, b.now)
		}
		wg.Add(1)
		go func() { // one writer: a Record call per outcome, concurrent with the other's
			defer wg.Done()
			for i, id := range ids {
				outs := []store.Outcome{}
				if w == 1 && i%2 == 0 { // failed once in this minute, then delivered in the next
					outs = append(outs, failed(id, 1, b.now, b.now, b.now))
				}
				if i%5 == 4 {
					outs = append(outs, deadLettered(id, len(outs)+1, minute.Add(time.Minute), b.now))
				} else {
					outs = append(outs, outcomeTook(succeeded(id, len(outs)+1, minute.Add(time.Minute)), 3*time.Millisecond))
				}
				for _, o := range outs {
					if _, err := b.s.Record(b.ctx, []store.Outcome{o}); err != nil {
						t.Errorf("Record: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	// A stale owner's outcome and one for the other account's delivery.
	late := succeeded(b.deliver(s1, b.now), 1, minute.Add(time.Minute))
	late.LeaseOwner = "node-gone"
	b.record(late, succeeded(b.deliver(so, b.now), 1, b.now))

	q := store.StatsQuery{AccountID: s1.AccountID, From: minute, Until: minute.Add(2 * time.Minute), Step: time.Minute}
	// Writer 1 failed 10 attempts at b.now (they end in its minute, 1.2 s
	// later); in the next minute each writer delivered 16 and
	// dead-lettered 4 (each dead letter a failed attempt too).
	want := []counts{{minute, 0, 10, 0, 10}, {minute.Add(time.Minute), 32, 8, 8, 40}}
	equal(t, "the account's minutes", countsOf(readStats(b, q)), want)
	q.SubscriptionID = s2.ID
	equal(t, "subscription two's minutes", countsOf(readStats(b, q)),
		[]counts{{minute, 0, 10, 0, 10}, {minute.Add(time.Minute), 16, 4, 4, 20}})
	q.SubscriptionID, q.EndpointID = "", s1.EndpointID
	equal(t, "endpoint one's minutes", countsOf(readStats(b, q)), []counts{{minute.Add(time.Minute), 16, 4, 4, 20}})
	q.EndpointID, q.Step = "", time.Hour
	q.From, q.Until = b.now.Truncate(time.Hour), b.now.Truncate(time.Hour).Add(time.Hour)
	equal(t, "the account's hour", countsOf(readStats(b, q)), []counts{{q.From, 32, 18, 8, 50}})
	q.AccountID = other.ID
	equal(t, "the other account's hour", countsOf(readStats(b, q)), []counts{{q.From, 1, 0, 0, 1}})
	q.AccountID = ""
	equal(t, "every account's hour", countsOf(readStats(b, q)), []counts{{q.From, 33, 18, 8, 51}})
}

// testStatsPercentiles: attempts of known durations recorded in one call
// each count in their duration's latency bucket, and the minute's p50 and
// p99 are within a factor of √2 of the exact ones.
func testStatsPercentiles(t *testing.T, b *bundle) {
	sub := b.sub("https://latency.example/hook")
	var outs []store.Outcome
	var took []time.Duration
	for i := range 100 {
		d := time.Duration(3+i*i) * time.Millisecond // 3 ms … 9.8 s, bunched low
		took = append(took, d)
		outs = append(outs, outcomeTook(succeeded(b.deliver(sub, b.now), 1, b.now.Truncate(time.Minute)), d))
	}
	b.record(outs...)
	minute := b.now.Truncate(time.Minute)
	rows := readStats(b, store.StatsQuery{AccountID: sub.AccountID, From: minute, Until: minute.Add(time.Hour), Step: time.Minute})
	if len(rows) != 1 || rows[0].Delivered != 100 {
		t.Fatalf("rows %+v; want one minute of 100 delivered", countsOf(rows))
	}
	var want [stats.Buckets]int64
	for _, d := range took {
		want[stats.Bucket(d)]++
	}
	if rows[0].Latency != want {
		t.Errorf("latency buckets %v; want %v (each attempt in its duration's)", rows[0].Latency, want)
	}
	slices.Sort(took)
	for _, p := range []float64{0.5, 0.99} {
		exact := float64(took[int(math.Ceil(p*100))-1].Milliseconds())
		got := rows[0].Percentile(p)
		if got < exact/math.Sqrt2 || got > exact*math.Sqrt2 {
			t.Errorf("p%v = %v ms; exact %v ms, want within a factor of √2", p*100, got, exact)
		}
	}
}

// testStatsAcknowledge: a pull consumer's acknowledgement counts one
// delivered, in the minute of the Settle's Now, without latency; a
// release counts nothing.
func testStatsAcknowledge(t *testing.T, b *bundle) {
	p := b.pullSub(true)
	b.queue(p, b.now)
	b.queue(p, b.now)
	res := receive(b, p, b.at(time.Minute), 10)
	at := b.at(time.Minute + lockFor/2) // the next minute, the lock still held
	settled(t, "acknowledge", settle(b, p, store.Acknowledge, at, res.Received[0].LockToken), nil)
	settled(t, "release", settle(b, p, store.Release, at, res.Received[1].LockToken), nil)
	minute := b.now.Truncate(time.Hour)
	got := countsOf(readStats(b, store.StatsQuery{AccountID: p.AccountID, From: minute, Until: minute.Add(time.Hour), Step: time.Minute}))
	equal(t, "acknowledged", got, []counts{{at.Truncate(time.Minute), 1, 0, 0, 0}})
}

// testStatsDeleteOld: DeleteOldStats deletes the rollups of minutes before
// its time, at most limit a call, and keeps the others.
func testStatsDeleteOld(t *testing.T, b *bundle) {
	sub := b.sub("https://old.example/hook")
	for _, at := range []time.Time{b.now, b.at(time.Minute), b.at(2 * time.Minute), b.at(3 * time.Minute)} {
		b.record(succeeded(b.deliver(sub, b.now), 1, at))
	}
	before := b.now.Truncate(time.Minute).Add(3 * time.Minute) // the first three minutes are old
	if n, err := b.s.DeleteOldStats(b.ctx, before, 2); err != nil || n != 2 {
		t.Fatalf("DeleteOldStats(limit 2) = %d, %v; want 2", n, err)
	}
	if n, err := b.s.DeleteOldStats(b.ctx, before, 2); err != nil || n != 1 {
		t.Fatalf("DeleteOldStats again = %d, %v; want 1", n, err)
	}
	from := b.now.Truncate(time.Hour)
	got := countsOf(readStats(b, store.StatsQuery{AccountID: sub.AccountID, From: from, Until: from.Add(time.Hour), Step: time.Minute}))
	equal(t, "kept", got, []counts{{before, 1, 0, 0, 1}})
}
