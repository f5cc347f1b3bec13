package recording

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/store"
)

// Metrics are the recorder's Prometheus collectors.
type Metrics struct {
	finished *prometheus.CounterVec // deliveries reaching a final status, by status
}

// NewMetrics creates the collectors and registers them with reg (nil: a
// private registry, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{finished: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_deliveries_finished_total",
		Help: "Deliveries that reached a final status: delivered, dead_lettered or dropped.",
	}, []string{"status"})}
	reg.MustRegister(m.finished)
	return m
}

func (m *Metrics) ended(out store.Outcome) {
	if out.Status.Final() {
		m.finished.WithLabelValues(string(out.Status)).Inc()
	}
}
