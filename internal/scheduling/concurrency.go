package scheduling

import "time"

// An endpoint's adaptive in-flight limit (lane.limit) follows Pub/Sub
// push's slow start, with TCP Vegas's check of the exchange times, so that
// an endpoint holds as many connections as its load needs rather than
// growing to the cap (EndpointConcurrency) whatever it answers:
//   - it starts at InitialConcurrency;
//   - a failure halves it (at least 1);
//   - a success grows it by one when the endpoint needed more and can take
//     more: the attempt ended with the lane at its limit and deliveries
//     waiting, and the endpoint is not queueing (its smoothed exchange time
//     is within rttTolerance of the least recent one, see rtts.queueing);
//   - a success while the endpoint queues lowers it by one, down to
//     InitialConcurrency: more attempts at once would only wait longer;
//   - a success with nothing waiting and less than half the limit in
//     flight lowers it by one, down to InitialConcurrency: an endpoint that
//     needs fewer connections gives them back (the idle ones close after
//     the client's IdleConnTimeout, internal/attempting/send.go).
//
// An exchange time of 0 (unknown: no request was made) skips the check.

// rttTolerance is how many times the least recent exchange time the
// smoothed one may reach before the endpoint counts as queueing.
const rttTolerance = 2

// rttEpoch is how many exchanges the least exchange time is kept for: the
// least of the last full epoch and of the current one counts, so a time
// older than two epochs is forgotten (an endpoint that became slower for
// good is measured again).
const rttEpoch = 256

// rtts is what a lane knows of its endpoint's exchange times. Guarded by
// scheduler.mu.
type rtts struct {
	smoothed time.Duration // exponentially weighted, gain 1/8
	min      time.Duration // least of the last full epoch; 0: none yet
	epochMin time.Duration // least of the current epoch; 0: none yet
	n        int           // exchanges in the current epoch
}

// add records one exchange's time.
func (r *rtts) add(d time.Duration) {
	if r.smoothed == 0 {
		r.smoothed = d
	} else {
		r.smoothed += (d - r.smoothed) / 8
	}
	if r.epochMin == 0 || d < r.epochMin {
		r.epochMin = d
	}
	if r.n++; r.n >= rttEpoch {
		r.min, r.epochMin, r.n = r.epochMin, 0, 0
	}
}

// least is the least exchange time of the last full epoch and the current
// one; 0 when none is known.
func (r *rtts) least() time.Duration {
	switch {
	case r.min == 0:
		return r.epochMin
	case r.epochMin == 0:
		return r.min
	}
	return min(r.min, r.epochMin)
}

// queueing reports whether the endpoint answers markedly slower than it
// can: the smoothed exchange time above rttTolerance times the least.
func (r *rtts) queueing() bool {
	least := r.least()
	return least > 0 && r.smoothed > rttTolerance*least
}

// adapt moves the lane's limit after an attempt's exchange ended (see the
// rules above): success is the health outcome's, rtt the exchange's time
// (0: unknown), atLimit whether the lane had its limit in flight when it
// ended. Caller holds scheduler.mu.
func (l *lane) adapt(c schedConfig, success bool, rtt time.Duration, atLimit bool) {
	if !success {
		l.limit = max(1, l.limit/2)
		return
	}
	queueing := false
	if rtt > 0 {
		l.rtt.add(rtt)
		queueing = l.rtt.queueing()
	}
	waiting := l.queued() > 0
	switch {
	case atLimit && waiting && !queueing:
		l.limit = min(c.EndpointConcurrency, l.limit+1)
	case queueing && l.limit > c.InitialConcurrency:
		l.limit--
	case !waiting && 2*l.inFlight < l.limit && l.limit > c.InitialConcurrency:
		l.limit--
	}
}
