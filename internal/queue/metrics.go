package queue

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// metrics counts what consumers do. The number of queued deliveries is a
// gauge read from the store at scrape time (the API's collector).
type metrics struct {
	receives, expiries, ended prometheus.Counter
	settles                   *prometheus.CounterVec
	finished                  Finished // nil: not counted
}

func newMetrics(reg prometheus.Registerer, fin Finished) *metrics {
	m := &metrics{finished: fin,
		receives: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_queue_received_total",
			Help: "Queued deliveries handed to consumers (each receive of a delivery counts).",
		}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_queue_lock_expiries_total",
			Help: "Deliveries received again after their previous lock expired unsettled.",
		}),
		ended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_queue_ended_total",
			Help: "Queued deliveries dead-lettered or dropped at receive (too many receives, or past their time to live).",
		}),
		settles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_queue_settled_total",
			Help: "Lock tokens settled by consumers, by action (acknowledge, release, reject, renew) and result (ok, lock_lost).",
		}, []string{"action", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.receives, m.expiries, m.ended, m.settles)
	}
	return m
}

func (m *metrics) received(res store.ReceiveResult) {
	m.receives.Add(float64(len(res.Received)))
	m.expiries.Add(float64(res.ExpiredLocks))
	m.ended.Add(float64(len(res.Ended)))
	if m.finished != nil {
		for _, d := range res.Ended {
			m.finished.Finished(d.Status, 1)
		}
	}
}

// actionNames are the actions' metric labels (and API names).
var actionNames = map[store.LockAction]string{
	store.Acknowledge: "acknowledge", store.Release: "release", store.Reject: "reject", store.Renew: "renew",
}

// settled counts a Settle's results, and the deliveries it finished: those
// acknowledged are delivered, those rejected dead-lettered (dropped when the
// subscription keeps no dead letters).
func (m *metrics) settled(r store.SettleRequest, res []error) {
	a := r.Action
	ok, lost := 0, 0
	for _, err := range res {
		if err == nil {
			ok++
		} else {
			lost++
		}
	}
	m.settles.WithLabelValues(actionNames[a], "ok").Add(float64(ok))
	m.settles.WithLabelValues(actionNames[a], "lock_lost").Add(float64(lost))
	if m.finished == nil {
		return
	}
	switch {
	case a == store.Acknowledge:
		m.finished.Finished(delivery.StatusDelivered, ok)
	case a == store.Reject && r.DeadLetter:
		m.finished.Finished(delivery.StatusDeadLettered, ok)
	case a == store.Reject:
		m.finished.Finished(delivery.StatusDropped, ok)
	}
}
