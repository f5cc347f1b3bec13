package scheduling

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/health"
)

// Metrics are the scheduling stage's Prometheus collectors.
type Metrics struct {
	changes *prometheus.CounterVec // circuit transitions, by from and to
}

// NewMetrics creates the collectors and registers them with reg (nil: a
// private registry, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{}
	m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_endpoint_transitions_total",
		Help: "Endpoint circuit state changes, by previous and new state.",
	}, []string{"from", "to"})
	reg.MustRegister(m.changes)
	return m
}

func (m *Metrics) transition(tr health.Transition) {
	m.changes.WithLabelValues(string(tr.From), string(tr.To)).Inc()
}

// Collector returns a Prometheus collector of the stage's gauges:
// endpoints by circuit state (as this node sees the endpoints it holds),
// the deliveries held in memory by source, attempts in flight and lanes in
// memory; and of the time rate-limited endpoints waited for a token. There is no series per endpoint: a user with many endpoints
// would get as many series; an endpoint's concurrency limit and attempts in
// flight are in its API resource (GET /v1/endpoints/{id}).
func (s *Service) Collector() prometheus.Collector { return gauges{s.sched} }

var (
	endpointsDesc = prometheus.NewDesc("herald_endpoints", "Endpoints held in this process's memory, by circuit state.", []string{"state"}, nil)
	heldDesc      = prometheus.NewDesc("herald_dispatch_held", "Deliveries held in memory, by where they came from (publish fast path or due loader).", []string{"source"}, nil)
	inFlightAll   = prometheus.NewDesc("herald_dispatch_in_flight", "Delivery attempts in flight in this process.", nil, nil)
	lanesDesc     = prometheus.NewDesc("herald_dispatch_lanes", "Endpoints with a lane in this process's memory (idle lanes are dropped after ten minutes).", nil, nil)
	rateWaitDesc  = prometheus.NewDesc("herald_endpoint_rate_limited_seconds_total",
		"Time rate-limited endpoints had deliveries ready to send (circuit open, a concurrency slot free) but waited for a token of their rate limit, summed over endpoints; a wait counts once it ends.", nil, nil)
)

type gauges struct{ s *scheduler }

func (c gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- endpointsDesc
	ch <- heldDesc
	ch <- inFlightAll
	ch <- lanesDesc
	ch <- rateWaitDesc
}

// Collect copies the counts under the scheduler's lock and sends them after
// releasing it: a slow scrape never holds up the lanes.
func (c gauges) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	states := map[health.State]int{health.Enabled: 0, health.Probation: 0, health.Disabled: 0, health.Frozen: 0}
	s.mu.Lock()
	for _, l := range s.lanes {
		if l.known {
			states[l.ep.Health.State]++
		}
	}
	fresh, loaded, inFlight, lanes, waited := s.freshHeld, s.loadHeld, s.inFlight, len(s.lanes), s.rates.waited
	s.mu.Unlock()
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(fresh), "publish")
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(loaded), "loader")
	ch <- prometheus.MustNewConstMetric(inFlightAll, prometheus.GaugeValue, float64(inFlight))
	ch <- prometheus.MustNewConstMetric(lanesDesc, prometheus.GaugeValue, float64(lanes))
	ch <- prometheus.MustNewConstMetric(rateWaitDesc, prometheus.CounterValue, waited.Seconds())
}
