package dispatch

import (
	"context"
	"sync"
)

// attemptSet registers the attempts in progress by subscription, so that
// deleting a subscription can cut its attempts short (StopSubscription).
// Its mutex is a leaf of the lock order.
type attemptSet struct {
	mu    sync.Mutex
	bySub map[string]map[*runningAttempt]struct{}
}

// runningAttempt is one registered attempt.
type runningAttempt struct {
	cancel context.CancelFunc
	done   chan struct{} // closed by remove
}

func (s *attemptSet) init() { s.bySub = map[string]map[*runningAttempt]struct{}{} }

// add registers an attempt of a subscription's delivery, with the function
// that cancels it.
func (s *attemptSet) add(sub string, cancel context.CancelFunc) *runningAttempt {
	a := &runningAttempt{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	m := s.bySub[sub]
	if m == nil {
		m = map[*runningAttempt]struct{}{}
		s.bySub[sub] = m
	}
	m[a] = struct{}{}
	s.mu.Unlock()
	return a
}

// remove unregisters an attempt whose HTTP exchange is over.
func (s *attemptSet) remove(sub string, a *runningAttempt) {
	s.mu.Lock()
	if m := s.bySub[sub]; m != nil {
		delete(m, a)
		if len(m) == 0 {
			delete(s.bySub, sub)
		}
	}
	s.mu.Unlock()
	close(a.done)
}

// cancelSub cancels every registered attempt of sub and returns them.
func (s *attemptSet) cancelSub(sub string) []*runningAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runningAttempt
	for a := range s.bySub[sub] {
		a.cancel()
		out = append(out, a)
	}
	return out
}

// StopSubscription cuts short the attempts in progress for a subscription
// that was deleted (or no longer wants pushes) and waits, until ctx ends,
// for them to return. Call it after the catalog no longer has the
// subscription: an attempt registers itself before it reads the catalog,
// so every attempt either is cancelled here or finds the subscription gone
// and sends nothing.
func (e *Engine) StopSubscription(ctx context.Context, subscriptionID string) error {
	for _, a := range e.running.cancelSub(subscriptionID) {
		select {
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
