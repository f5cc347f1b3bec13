package scheduling_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/scheduling"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// TestScrapeDoesNotHoldTheScheduler: a Prometheus scrape that reads slowly
// (here: not at all, after the first metric) must not hold the lock every
// lane needs. The collector copies its counts under the lock and sends
// after releasing it.
func TestScrapeDoesNotHoldTheScheduler(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	eng := scheduling.New(scheduling.Config{Store: st, Catalog: catalog.New(st)})
	t.Cleanup(eng.Stop)

	ch := make(chan prometheus.Metric) // unbuffered: each send waits for the reader
	go func() { eng.Collector().Collect(ch); close(ch) }()
	<-ch // the scrape is under way, and now stuck sending the next metric

	done := make(chan struct{})
	go func() {
		eng.Reserve([]string{"ep_a"}, time.Now()).Abort() // takes the scheduler's lock
		_ = eng.Stats()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler's lock is held by a scrape that does not read")
	}
	for range ch { // let the collector finish
	}
}
