package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Metrics are the dispatcher's Prometheus collectors.
type Metrics struct {
	attempts *prometheus.CounterVec   // by outcome
	finished *prometheus.CounterVec   // deliveries reaching a final status, by status
	latency  *prometheus.HistogramVec // attempt duration, by outcome class
	changes  *prometheus.CounterVec   // circuit transitions, by from and to
}

// NewMetrics creates the collectors and registers them with reg (nil: a
// private registry, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_attempts_total",
			Help: "Delivery attempts by outcome (http_200, http_503, timeout, connection_refused, ...).",
		}, []string{"outcome"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_deliveries_finished_total",
			Help: "Deliveries that reached a final status: delivered, dead_lettered or dropped.",
		}, []string{"status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_attempt_duration_seconds",
			Help:    "Duration of delivery attempts, from sending the request to reading the response.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"result"}),
	}
	m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_endpoint_transitions_total",
		Help: "Endpoint circuit state changes, by previous and new state.",
	}, []string{"from", "to"})
	reg.MustRegister(m.attempts, m.finished, m.latency, m.changes)
	return m
}

func (m *Metrics) observe(r result) {
	m.attempts.WithLabelValues(r.outcome).Inc()
	class := "response"
	if r.status == 0 {
		class = "error"
	}
	m.latency.WithLabelValues(class).Observe(r.duration.Seconds())
}

func (m *Metrics) ended(out store.Outcome) {
	if out.Status.Final() {
		m.finished.WithLabelValues(string(out.Status)).Inc()
	}
}

func (m *Metrics) transition(tr health.Transition) {
	m.changes.WithLabelValues(string(tr.From), string(tr.To)).Inc()
}

// Collector returns a Prometheus collector of the engine's gauges:
// endpoints by circuit state (as this node sees the endpoints it holds),
// the deliveries held in memory by source, attempts in flight and lanes in
// memory. There is no series per endpoint: a user with many endpoints
// would get as many series; an endpoint's concurrency limit and attempts in
// flight are in its API resource (GET /v1/endpoints/{id}).
func (e *Engine) Collector() prometheus.Collector { return engineCollector{e} }

var (
	endpointsDesc = prometheus.NewDesc("herald_endpoints", "Endpoints held in this process's memory, by circuit state.", []string{"state"}, nil)
	heldDesc      = prometheus.NewDesc("herald_dispatch_held", "Deliveries held in memory, by where they came from (publish fast path or due loader).", []string{"source"}, nil)
	inFlightAll   = prometheus.NewDesc("herald_dispatch_in_flight", "Delivery attempts in flight in this process.", nil, nil)
	lanesDesc     = prometheus.NewDesc("herald_dispatch_lanes", "Endpoints with a lane in this process's memory (idle lanes are dropped after ten minutes).", nil, nil)
)

type engineCollector struct{ e *Engine }

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- endpointsDesc
	ch <- heldDesc
	ch <- inFlightAll
	ch <- lanesDesc
}

// Collect copies the counts under the scheduler's lock and sends them after
// releasing it: a slow scrape never holds up the lanes.
func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.e.sched
	states := map[health.State]int{health.Enabled: 0, health.Probation: 0, health.Disabled: 0, health.Frozen: 0}
	s.mu.Lock()
	for _, l := range s.lanes {
		if l.known {
			states[l.ep.Health.State]++
		}
	}
	fresh, loaded, inFlight, lanes := s.freshHeld, s.loadHeld, s.inFlight, len(s.lanes)
	s.mu.Unlock()
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(fresh), "publish")
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(loaded), "loader")
	ch <- prometheus.MustNewConstMetric(inFlightAll, prometheus.GaugeValue, float64(inFlight))
	ch <- prometheus.MustNewConstMetric(lanesDesc, prometheus.GaugeValue, float64(lanes))
}
