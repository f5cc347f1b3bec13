package attempting

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the attempts' Prometheus collectors.
type Metrics struct {
	attempts *prometheus.CounterVec   // by outcome
	latency  *prometheus.HistogramVec // attempt duration, by outcome class
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
			Help: "Delivery attempts by outcome (http_200, http_503, timeout, connection_refused, broker_acked, broker_unreachable, ...).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_attempt_duration_seconds",
			Help:    "Duration of delivery attempts, from sending the request to reading the response.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"result"}),
	}
	reg.MustRegister(m.attempts, m.latency)
	return m
}

func (m *Metrics) observe(r result) {
	m.attempts.WithLabelValues(r.outcome).Inc()
	class := "response" // an answer, or a broker's acknowledgement
	if r.status == 0 && r.outcome != outcomeBrokerAcked {
		class = "error"
	}
	m.latency.WithLabelValues(class).Observe(r.duration.Seconds())
}
