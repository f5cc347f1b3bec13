package sqlite

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/drivertest"
	"github.com/herald-events/herald/internal/subscription"
)

// BenchmarkCommitPages counts the pages a steady-state commit writes to the
// WAL, by B-tree (table or index), which the CPU figures of end-to-end runs
// are too noisy to show: every page is two pwrite calls and a checksum, and
// in steady-single the WAL's frames were about a sixth of the server's CPU.
// Each iteration is one commit holding a round of the engine's fast path:
// the round's publishes (claimed deliveries, one per event, each to one of
// 20 subscriptions taken at random; event IDs random as UUIDv4s are, or in
// publish order as UUIDv7s are) and the outcomes of the previous round
// (delivered at the first attempt).
// single8 is steady-single's shape (eight one-event publishes a commit, as
// measured in herald bench), batch100 steady-batch's (one publish of 100
// events). The store is first filled with 200,000 deliveries so that its
// B-trees are deep and each subscription's entries lie on pages of their
// own. It reports pages/commit and pages/delivery; -v logs the B-trees.
func BenchmarkCommitPages(b *testing.B) {
	for _, shape := range []struct {
		name           string
		calls, perCall int
	}{{"single8", 8, 1}, {"batch100", 1, 100}} {
		for _, random := range []bool{true, false} {
			ids := "/random-ids"
			if !random {
				ids = "/ordered-ids"
			}
			b.Run(shape.name+ids, func(b *testing.B) {
				benchCommitPages(b, shape.calls, shape.perCall, random)
			})
		}
	}
}

func benchCommitPages(b *testing.B, calls, perCall int, randomIDs bool) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "pages.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := &pageRounds{s: s, rng: rand.New(rand.NewPCG(1, 2)), randomIDs: randomIDs, lease: store.Lease{Owner: "bench", Until: time.Now().Add(time.Hour)}}
	for i := range 20 {
		r.subs = append(r.subs, drivertest.BenchSub(b, s, i))
	}
	for range 2000 { // 200,000 deliveries
		r.round(b, 1, 100)
	}
	// From here on the WAL only grows: every frame it holds at the end is
	// a page one of the measured commits wrote.
	if err := s.rawWrite(ctx, func(w *writeConn) error {
		_, err := w.exec(`PRAGMA wal_autocheckpoint = 0`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var busy, logged, moved int
	if err := s.readDB.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
		b.Fatalf("checkpoint: busy %d, %v", busy, err) // the WAL would still hold the filling's frames
	}
	b.ResetTimer()
	for range b.N {
		r.round(b, calls, perCall)
	}
	b.StopTimer()
	byTree, frames := walPages(b, s, path)
	b.ReportMetric(float64(frames)/float64(b.N), "pages/commit") // a round is one commit (round)
	b.ReportMetric(float64(frames)/float64(b.N*calls*perCall), "pages/delivery")
	for _, t := range byTree {
		b.Logf("%-32s %6.2f pages/commit", t.name, float64(t.pages)/float64(b.N))
	}
}

// pageRounds makes BenchmarkCommitPages's rounds.
type pageRounds struct {
	s         *Store
	rng       *rand.Rand
	randomIDs bool // event IDs random (UUIDv4's), else in publish order (UUIDv7's)
	events    int  // events published so far
	subs      []subscription.Subscription
	lease     store.Lease
	prev      []store.Outcome // the previous round's outcomes
}

// round commits calls publishes of perCall events, each with a claimed
// delivery to a random subscription, and the previous round's outcomes, in
// one commit (the writer is held until every call is queued).
func (r *pageRounds) round(b *testing.B, calls, perCall int) {
	ctx := context.Background()
	now := time.Now()
	var outs []store.Outcome
	evs := make([][]store.NewEvent, calls)
	for c := range evs {
		for range perCall {
			sub := r.subs[r.rng.IntN(len(r.subs))]
			d := store.NewDelivery{ID: ids.New("dlv_", now), SubscriptionID: sub.ID, EndpointID: sub.EndpointID, Claimed: true}
			id := uint64(r.events)
			if r.randomIDs {
				id = r.rng.Uint64()
			}
			r.events++
			evs[c] = append(evs[c], store.NewEvent{ID: fmt.Sprintf("%016x", id), Source: "bench", Type: "bench.event",
				Payload: []byte(`{"specversion":"1.0","data":{"n":1}}`), PublishedAt: now, Deliveries: []store.NewDelivery{d}})
			outs = append(outs, store.Outcome{Attempt: delivery.Attempt{DeliveryID: d.ID, Number: 1, StartedAt: now,
				Duration: time.Millisecond, StatusCode: 200, Outcome: "http_200"},
				Status: delivery.StatusDelivered, Attempts: 1, RoundAttempts: 1, LastStatusCode: 200, LastOutcome: "http_200",
				DeliveredAt: now, LeaseOwner: r.lease.Owner})
		}
	}
	before := r.s.Stats().Commits
	release := holdWriter(b, r.s)
	var wg sync.WaitGroup
	errs := make(chan error, calls+1)
	for _, e := range evs {
		wg.Go(func() {
			_, err := r.s.Publish(ctx, e, store.PublishOptions{Lease: r.lease})
			errs <- err
		})
	}
	queued := calls
	if len(r.prev) > 0 {
		queued++
		wg.Go(func() {
			_, err := r.s.Record(ctx, r.prev)
			errs <- err
		})
	}
	waitQueued(b, r.s, queued)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if n := r.s.Stats().Commits - before; n != 2 { // the hold's and the round's
		b.Fatalf("a round took %d commits besides the hold's, want 1", n-1)
	}
	r.prev = outs
}

// treePages is how many WAL frames held pages of one B-tree.
type treePages struct {
	name  string
	pages int
}

// walPages reads the WAL of the database at path and counts its frames of
// the current generation by the B-tree their page belongs to now (dbstat),
// most first.
func walPages(b *testing.B, s *Store, path string) ([]treePages, int) {
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	const walHeader, frameHeader = 32, 24
	pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
	owner := map[uint32]string{}
	rows, err := s.readDB.Query(`SELECT name, pageno FROM dbstat`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			b.Fatal(err)
		}
		owner[page] = name
	}
	if err := rows.Close(); err != nil {
		b.Fatal(err)
	}
	counts := map[string]int{}
	frames := 0
	salt := string(wal[16:24])
	for off := walHeader; off+frameHeader+pageSize <= len(wal); off += frameHeader + pageSize {
		if string(wal[off+8:off+16]) != salt {
			break // a frame of an earlier generation
		}
		name := owner[binary.BigEndian.Uint32(wal[off:])]
		if name == "" {
			name = "(free)"
		}
		counts[name]++
		frames++
	}
	var byTree []treePages
	for name, n := range counts {
		byTree = append(byTree, treePages{name, n})
	}
	slices.SortFunc(byTree, func(x, y treePages) int { return cmp.Or(y.pages-x.pages, cmp.Compare(x.name, y.name)) })
	return byTree, frames
}
