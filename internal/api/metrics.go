package api

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pendingCollector reports pending deliveries by lane, and queued ones,
// from the store. The counts are exact (CountPending, CountQueued): they
// read an index entry per waiting delivery (about 70 ms for a million on
// PostgreSQL), which a scrape every 15 s or more can afford and a gauge
// needs, unlike a page (the console's overview counts up to a cap: see
// backlogCap in internal/console/overview.go). They are cached for
// pendingCacheFor, so a node counts at most once per pendingCacheFor
// however often it is scraped.
type pendingCollector struct {
	store interface {
		CountPending(ctx context.Context) (fresh, retry int64, err error)
		CountQueued(ctx context.Context) (int64, error)
	}
	desc, queuedDesc *prometheus.Desc

	mu                   sync.Mutex
	at                   time.Time
	fresh, retry, queued int64
	ok                   bool
}

const pendingCacheFor = 5 * time.Second

func newPendingCollector(s Store) *pendingCollector {
	return &pendingCollector{
		store: s,
		desc: prometheus.NewDesc("herald_deliveries_pending",
			"Pending deliveries in the store by lane: fresh (no attempt yet) or retry.", []string{"lane"}, nil),
		queuedDesc: prometheus.NewDesc("herald_deliveries_queued",
			"Queued deliveries in the store: a pull or deactivated push subscription's, waiting for consumers.", nil, nil),
	}
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.queuedDesc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) > pendingCacheFor {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fresh, retry, err := c.store.CountPending(ctx)
		var queued int64
		if err == nil {
			queued, err = c.store.CountQueued(ctx)
		}
		cancel()
		c.at, c.ok = time.Now(), err == nil
		if err == nil {
			c.fresh, c.retry, c.queued = fresh, retry, queued
		}
	}
	if !c.ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.fresh), "fresh")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.retry), "retry")
	ch <- prometheus.MustNewConstMetric(c.queuedDesc, prometheus.GaugeValue, float64(c.queued))
}
