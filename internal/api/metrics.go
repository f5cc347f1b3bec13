package api

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pendingCollector reports pending deliveries by lane from the store. The
// count is cached for pendingCacheFor so frequent scrapes cost one query.
type pendingCollector struct {
	store interface {
		CountPending(ctx context.Context) (fresh, retry int64, err error)
	}
	desc *prometheus.Desc

	mu           sync.Mutex
	at           time.Time
	fresh, retry int64
	ok           bool
}

const pendingCacheFor = 5 * time.Second

func newPendingCollector(s Store) *pendingCollector {
	return &pendingCollector{
		store: s,
		desc: prometheus.NewDesc("herald_deliveries_pending",
			"Pending deliveries in the store by lane: fresh (no attempt yet) or retry.", []string{"lane"}, nil),
	}
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) > pendingCacheFor {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fresh, retry, err := c.store.CountPending(ctx)
		cancel()
		c.at, c.ok = time.Now(), err == nil
		if err == nil {
			c.fresh, c.retry = fresh, retry
		}
	}
	if !c.ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.fresh), "fresh")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.retry), "retry")
}
