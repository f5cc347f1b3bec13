// Package queue serves the consumers of queued deliveries: a pull
// subscription's, or a deactivated push subscription's. Receive long-polls
// without polling the store: a waiting consumer sleeps until the store says
// deliveries of its subscription became receivable (Notify, wired to the
// store's OnQueued: on PostgreSQL that includes other nodes' publishes), the
// earliest known lock expiry or release delay passes, or its wait ends. So
// a waiting consumer costs one store read when it starts waiting and one
// each time it is woken, nothing in between.
package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/testsignal"
)

// Limits of the receive and settle calls.
const (
	MaxEvents      = 1000
	MaxWait        = 60 * time.Second
	MinLock        = 10 * time.Second
	MaxLock        = 300 * time.Second
	DefaultLock    = 60 * time.Second
	MaxTokens      = 1000
	DefaultWaiters = 10_000
)

// ErrTooManyWaiters: the process already holds its bound of waiting
// consumers; the caller should answer 503 and the consumer retry.
var ErrTooManyWaiters = errors.New("too many consumers waiting")

// Finished counts deliveries that reach a final status
// (herald_deliveries_finished_total: recording.Metrics.Finished).
type Finished interface {
	Finished(status delivery.Status, n int)
}

// Store is what the consumers' calls need of the store.
type Store interface {
	Receive(ctx context.Context, r store.ReceiveRequest) (store.ReceiveResult, error)
	Settle(ctx context.Context, r store.SettleRequest) ([]error, error)
}

// Service receives and settles queued deliveries. It is safe for
// concurrent use.
type Service struct {
	store   Store
	clock   clock.Clock
	metrics *metrics
	log     *slog.Logger // the deliveries the calls end (log.go)

	mu      sync.Mutex
	waiting map[string]map[chan struct{}]struct{} // by subscription
	count   int
	max     int
	closed  bool // Close was called: nothing waits any more

	// TestSignals are emitted for tests (off unless initialized).
	TestSignals Signals
}

// Signals are what the service tells tests.
type Signals struct {
	// Slept is emitted when a receive goes to sleep, with the time (on the
	// clock) at which its timer ends the sleep unless it is woken first.
	Slept testsignal.Signal[time.Time]
}

// Close ends every wait in progress (those receives return what they
// have: nothing) and makes later receives return at once, so that a server
// shutting down does not hold its consumers' requests until their max_wait.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, w := range s.waiting {
		for ch := range w {
			close(ch)
		}
		delete(s.waiting, id)
	}
}

// New returns a service; reg, when not nil, gets its metrics; fin, when
// not nil, counts the deliveries its calls finish (acknowledged, rejected,
// or ended by a receive); log, when not nil, gets a line for each delivery
// its calls dead-letter or drop (log.go).
func New(st Store, clk clock.Clock, reg prometheus.Registerer, fin Finished, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: st, clock: clk, metrics: newMetrics(reg, fin), log: log,
		waiting: map[string]map[chan struct{}]struct{}{}, max: DefaultWaiters}
}

// Notify wakes the consumers waiting on these subscriptions. It never
// blocks (the store calls it after its commits).
func (s *Service) Notify(subscriptionIDs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range subscriptionIDs {
		for ch := range s.waiting[id] {
			close(ch)
		}
		delete(s.waiting, id)
	}
}

// Waiting returns how many consumers are waiting (for tests and metrics).
func (s *Service) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// wait registers a waiter on a subscription: the channel is closed by
// Notify; done unregisters it.
func (s *Service) wait(id string) (ch chan struct{}, done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count >= s.max {
		return nil, nil, ErrTooManyWaiters
	}
	ch = make(chan struct{})
	if s.closed {
		close(ch) // shutting down: no wait
		s.count++
		return ch, func() {
			s.mu.Lock()
			s.count--
			s.mu.Unlock()
		}, nil
	}
	if s.waiting[id] == nil {
		s.waiting[id] = map[chan struct{}]struct{}{}
	}
	s.waiting[id][ch] = struct{}{}
	s.count++
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.count--
		if w := s.waiting[id]; w != nil {
			delete(w, ch)
			if len(w) == 0 {
				delete(s.waiting, id)
			}
		}
	}, nil
}

// Receive locks up to r.Max receivable deliveries, waiting up to maxWait
// (on the injected clock) for some to become receivable when there are
// none. It returns what it locked, possibly nothing when the wait ended.
// ctx ending (the consumer went away) ends the wait too.
func (s *Service) Receive(ctx context.Context, r store.ReceiveRequest, maxWait time.Duration) (store.ReceiveResult, error) {
	deadline := s.clock.Now().Add(maxWait)
	for {
		// Registered before the read, so a notification between the read
		// and the sleep is not lost.
		ch, done, err := s.wait(r.SubscriptionID)
		if err != nil {
			return store.ReceiveResult{}, err
		}
		r.Now = s.clock.Now()
		res, err := s.store.Receive(ctx, r)
		if err != nil || len(res.Received) > 0 || !r.Now.Before(deadline) || s.isClosed() {
			done()
			if err == nil {
				s.metrics.received(res)
				s.logEnds(r.SubscriptionID, res.Ended)
			}
			return res, err
		}
		s.metrics.received(res) // what it ended
		s.logEnds(r.SubscriptionID, res.Ended)
		until := deadline
		if !res.NextAt.IsZero() && res.NextAt.Before(until) {
			until = res.NextAt
		}
		// From the clock's time now, not the read's: it may have moved
		// during the read.
		d := until.Sub(s.clock.Now())
		if d <= 0 {
			done()
			continue
		}
		t := s.clock.NewTimer(d)
		s.TestSignals.Slept.Signal(t.When())
		select {
		case <-ch:
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			done()
			return store.ReceiveResult{}, ctx.Err()
		}
		t.Stop()
		done()
	}
}

// Settle applies an action to lock tokens and returns each token's result
// (nil or store.ErrLockLost), in order.
func (s *Service) Settle(ctx context.Context, r store.SettleRequest) ([]error, error) {
	r.Now = s.clock.Now()
	res, err := s.store.Settle(ctx, r)
	if err == nil {
		s.metrics.settled(r, res)
		s.logRejected(r, res)
	}
	return res, err
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
