package recording

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/delivery"
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
		Help: "Deliveries that reached a final status (delivered, dead_lettered or dropped): by an attempt's outcome, " +
			"a consumer's acknowledgement or rejection, or a receive that ended them.",
	}, []string{"status"})}
	reg.MustRegister(m.finished)
	return m
}

func (m *Metrics) ended(out store.Outcome) { m.Finished(out.Status, 1) }

// Finished counts n deliveries that reached status. The recorder counts
// those its outcomes finish, when the store applied them (report); the
// consumers' calls count theirs here too,
// each on the node that made the write, once (internal/queue): an
// acknowledgement (delivered), a rejection (dead_lettered, or dropped) and
// a receive that ended deliveries (dead_lettered or dropped). A status
// that is not final is not counted. The deliveries a subscription's
// deletion drops in the store are not counted (those held in memory then
// are, when the recorder writes their outcome).
func (m *Metrics) Finished(status delivery.Status, n int) {
	if status.Final() && n > 0 {
		m.finished.WithLabelValues(string(status)).Add(float64(n))
	}
}
