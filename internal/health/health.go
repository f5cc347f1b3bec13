// Package health is the endpoint circuit: a pure state machine that turns
// the outcomes of delivery attempts to one URL into the endpoint's state,
// and tells the scheduler (internal/scheduling) what it may send there.
//
// States (Workfront's disabled/frozen URL circuit and Event Grid's delayed
// delivery, combined):
//
//   - enabled: deliveries flow, up to the endpoint's concurrency.
//   - probation (Event Grid's delayed delivery): after ProbationAfter
//     consecutive failures, new and retried deliveries wait a cool-down that
//     starts at ProbationInitial and doubles after each failed probe up to
//     ProbationMax; when it ends one probe is sent; a success ends probation.
//   - disabled (Workfront): more than MinAttempts attempts in the rolling
//     Window with a failure rate over FailureRate, or DisableConsecutive
//     consecutive failures, or a 410 Gone. Only one probe every ProbeInterval;
//     a success re-enables the endpoint.
//   - frozen (Workfront): more than FreezeStaleConsecutive consecutive
//     failures with the last success (or, with none, the first attempt) older
//     than FreezeStaleAfter, or FreezeConsecutive consecutive failures.
//     Nothing is sent until Enable (the API), which also resets the counters.
//     Freeze (the API) freezes an endpoint by hand.
//
// Every change of state keeps its reason (Health.Reason; the reasons are
// made in reasons.go).
//
// Everything here is a function of its inputs; time comes in as arguments.
package health

import (
	"errors"
	"time"
)

// State names an endpoint's circuit state.
type State string

const (
	Enabled   State = "enabled"
	Probation State = "probation"
	Disabled  State = "disabled"
	Frozen    State = "frozen"
)

// States are the circuit states, in the order of the list above (the
// values GET /v1/endpoints?state= takes).
var States = []State{Enabled, Probation, Disabled, Frozen}

// Config holds the thresholds. Defaults (DefaultConfig) are Workfront's and
// Event Grid's numbers where they give one.
type Config struct {
	Window                 time.Duration // rolling window of the failure-rate rule
	MinAttempts            int           // the rate rule needs more attempts than this in the window
	FailureRate            float64       // ...and a failure rate above this
	DisableConsecutive     int64         // disabled at this many consecutive failures
	FreezeStaleConsecutive int64         // frozen above this many consecutive failures...
	FreezeStaleAfter       time.Duration // ...when the last success is older than this
	FreezeConsecutive      int64         // frozen at this many consecutive failures
	ProbeInterval          time.Duration // a disabled endpoint's probe period
	ProbationAfter         int64         // probation at this many consecutive failures
	ProbationInitial       time.Duration // first cool-down
	ProbationMax           time.Duration // longest cool-down
}

// DefaultConfig returns the Workfront and Event Grid numbers.
func DefaultConfig() Config {
	return Config{
		Window:                 time.Hour,
		MinAttempts:            100,
		FailureRate:            0.7,
		DisableConsecutive:     2000,
		FreezeStaleConsecutive: 2000,
		FreezeStaleAfter:       72 * time.Hour,
		FreezeConsecutive:      50000,
		ProbeInterval:          10 * time.Minute,
		ProbationAfter:         10,
		ProbationInitial:       10 * time.Second,
		ProbationMax:           5 * time.Minute,
	}
}

// Validate reports the first threshold that makes no sense, naming it as
// herald serve's flag does.
func (c Config) Validate() error {
	switch {
	case c.Window < time.Minute:
		return errors.New("--health-window must be at least 1m")
	case c.MinAttempts < 1:
		return errors.New("--health-min-attempts must be at least 1")
	case c.FailureRate <= 0 || c.FailureRate > 1:
		return errors.New("--health-failure-rate must be above 0 and at most 1")
	case c.DisableConsecutive < 1 || c.FreezeStaleConsecutive < 1 || c.FreezeConsecutive < 1:
		return errors.New("the --health-*-consecutive thresholds must be at least 1")
	case c.FreezeStaleAfter <= 0 || c.ProbeInterval <= 0:
		return errors.New("--health-freeze-stale-after and --health-probe-interval must be positive")
	case c.ProbationAfter < 0:
		return errors.New("--probation-after must be 0 (off) or more")
	case c.ProbationInitial <= 0 || c.ProbationMax < c.ProbationInitial:
		return errors.New("--probation-initial must be positive and at most --probation-max")
	}
	return nil
}

// Health is one endpoint's circuit state and counters.
type Health struct {
	State               State
	ConsecutiveFailures int64
	Window              Window
	FirstAttemptAt      time.Time
	LastSuccessAt       time.Time
	LastFailureAt       time.Time
	DisabledAt          time.Time
	FrozenAt            time.Time
	// NextProbeAt is when a probe may next be sent (probation, disabled).
	NextProbeAt time.Time
	// ProbationDelay is the current cool-down (probation only).
	ProbationDelay time.Duration
	// Reason is why the endpoint is in State: the Reason of the
	// transition that brought it there ("" while it never changed).
	Reason string
}

// Outcome is what an attempt to the endpoint told about its health.
type Outcome struct {
	At      time.Time
	Success bool
	// Gone is a 410 answer: the receiver asks to stop sending.
	Gone bool
	// Probe marks an attempt sent as a probe (while the circuit was not
	// open). Only a failed probe moves the next probe time: failures of
	// attempts that were already in flight when the circuit closed are
	// counted but do not lengthen the cool-down.
	Probe bool
}

// Transition is a change of state, reported for events and metrics.
type Transition struct {
	From, To State
	Reason   string // why, in words (reasons.go): "2000 consecutive failures", "410 Gone", ...
}

// Changed reports whether the transition changed the state.
func (t Transition) Changed() bool { return t.From != t.To }

// Observe applies an attempt's outcome to h and returns the transition (From
// equals To when the state did not change). The disable and freeze rules are
// evaluated when a failure arrives; any success re-enables a probation or
// disabled endpoint. An outcome arriving while frozen
// (an attempt that was in flight when the endpoint froze) updates the
// counters but leaves it frozen. A change of state sets h.Reason.
func (c Config) Observe(h *Health, o Outcome) Transition {
	tr := c.observe(h, o)
	if tr.Changed() {
		h.Reason = tr.Reason
	}
	return tr
}

// observe is Observe but for the reason.
func (c Config) observe(h *Health, o Outcome) Transition {
	from := h.State
	if from == "" {
		from, h.State = Enabled, Enabled
	}
	if h.FirstAttemptAt.IsZero() {
		h.FirstAttemptAt = o.At
	}
	h.Window.Add(c.Window, o.At, o.Success)

	if o.Success {
		h.ConsecutiveFailures = 0
		h.LastSuccessAt = o.At
		if from == Probation || from == Disabled {
			h.State = Enabled
			h.NextProbeAt, h.ProbationDelay = time.Time{}, 0
			return Transition{From: from, To: Enabled, Reason: ReasonSucceeded}
		}
		return Transition{From: from, To: from}
	}

	h.ConsecutiveFailures++
	h.LastFailureAt = o.At
	if from == Frozen {
		return Transition{From: from, To: from}
	}
	if reason := c.freezeReason(h, o.At); reason != "" {
		h.State, h.FrozenAt = Frozen, o.At
		h.NextProbeAt, h.ProbationDelay = time.Time{}, 0
		return Transition{From: from, To: Frozen, Reason: reason}
	}
	if from == Disabled {
		if o.Probe {
			h.NextProbeAt = o.At.Add(c.ProbeInterval)
		}
		return Transition{From: from, To: from}
	}
	if reason := c.disableReason(h, o); reason != "" {
		h.State, h.DisabledAt = Disabled, o.At
		h.NextProbeAt, h.ProbationDelay = o.At.Add(c.ProbeInterval), 0
		return Transition{From: from, To: Disabled, Reason: reason}
	}
	if from == Probation {
		if !o.Probe {
			return Transition{From: from, To: from}
		}
		h.ProbationDelay *= 2
		if h.ProbationDelay > c.ProbationMax {
			h.ProbationDelay = c.ProbationMax
		}
		h.NextProbeAt = o.At.Add(h.ProbationDelay)
		return Transition{From: from, To: from}
	}
	if c.ProbationAfter > 0 && h.ConsecutiveFailures >= c.ProbationAfter {
		h.State = Probation
		h.ProbationDelay = c.ProbationInitial
		h.NextProbeAt = o.At.Add(h.ProbationDelay)
		return Transition{From: from, To: Probation, Reason: ReasonConsecutive(h.ConsecutiveFailures)}
	}
	return Transition{From: from, To: from}
}

func (c Config) freezeReason(h *Health, now time.Time) string {
	if h.ConsecutiveFailures >= c.FreezeConsecutive {
		return ReasonConsecutive(h.ConsecutiveFailures)
	}
	if h.ConsecutiveFailures > c.FreezeStaleConsecutive {
		ref := h.LastSuccessAt
		if ref.IsZero() {
			ref = h.FirstAttemptAt
		}
		if now.Sub(ref) > c.FreezeStaleAfter {
			return ReasonStale(h.ConsecutiveFailures, c.FreezeStaleAfter)
		}
	}
	return ""
}

func (c Config) disableReason(h *Health, o Outcome) string {
	if o.Gone {
		return ReasonGone
	}
	if h.ConsecutiveFailures >= c.DisableConsecutive {
		return ReasonConsecutive(h.ConsecutiveFailures)
	}
	attempts, failures := h.Window.Counts(c.Window, o.At)
	// The quotient is rounded once, to the same double as the rate when the
	// two are equal (119/170 and 0.7): exactly the rate is not over it, as
	// the product (0.7 × 170 = 118.99999999999999) would wrongly say.
	if attempts > int64(c.MinAttempts) && float64(failures)/float64(attempts) > c.FailureRate {
		return ReasonRate(failures, attempts)
	}
	return ""
}

// Enable re-enables an endpoint through the API: state enabled, counters and
// window reset, probes cleared. The success and failure times are kept. A
// change of state sets h.Reason (ReasonEnabledByHand).
func (c Config) Enable(h *Health) Transition {
	from := h.State
	if from == "" {
		from = Enabled
	}
	h.State = Enabled
	h.ConsecutiveFailures = 0
	h.Window = Window{}
	h.NextProbeAt, h.ProbationDelay = time.Time{}, 0
	h.DisabledAt, h.FrozenAt = time.Time{}, time.Time{}
	h.FirstAttemptAt = time.Time{}
	tr := Transition{From: from, To: Enabled, Reason: ReasonEnabledByHand}
	if tr.Changed() {
		h.Reason = tr.Reason
	}
	return tr
}

// Freeze freezes an endpoint through the API at now: nothing is sent to it
// until Enable, and nothing thaws it on its own (no probe; a success of an
// attempt that was in flight leaves it frozen, as Observe does). The
// counters and the window are kept. h.Reason becomes ReasonFrozenByHand. An
// endpoint already frozen, by hand or by its failures, is left as it is.
func (c Config) Freeze(h *Health, now time.Time) Transition {
	from := h.State
	if from == "" {
		from = Enabled
	}
	if from == Frozen {
		return Transition{From: from, To: from}
	}
	h.State, h.FrozenAt = Frozen, now
	h.NextProbeAt, h.ProbationDelay = time.Time{}, 0
	h.Reason = ReasonFrozenByHand
	return Transition{From: from, To: Frozen, Reason: ReasonFrozenByHand}
}

// Gate says what the scheduler may send to the endpoint at now.
type Gate int

const (
	// Open: deliveries flow.
	Open Gate = iota
	// ProbeNow: one probe may be sent now.
	ProbeNow
	// Closed: nothing now; see Health.NextProbeAt (zero when frozen).
	Closed
)

// Gate returns what may be sent at now.
func (c Config) Gate(h *Health, now time.Time) Gate {
	switch h.State {
	case "", Enabled:
		return Open
	case Frozen:
		return Closed
	}
	if !now.Before(h.NextProbeAt) {
		return ProbeNow
	}
	return Closed
}
