package attempting

import (
	"context"
	"sync"
)

// registry registers the attempts in progress by subscription, so that
// deleting a subscription can cut its attempts short (StopSubscription).
// Its mutex is a leaf of the lock order.
type registry struct {
	mu    sync.Mutex
	bySub map[string]map[*runningAttempt]struct{}
}

// runningAttempt is one registered attempt. It is registered before its
// request's context exists (before the catalog is read: see
// StopSubscription), so cutting it short is remembered: the request is
// cancelled as soon as it is armed with the context's cancel function.
type runningAttempt struct {
	done chan struct{} // closed by remove

	mu     sync.Mutex         // a leaf of the lock order
	cut    bool               // cut short by cancelSub
	cancel context.CancelFunc // cancels its request; nil until arm
}

// arm gives the attempt the function that cancels its request, calling it
// at once when the attempt was already cut short.
func (a *runningAttempt) arm(cancel context.CancelFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel = cancel
	if a.cut {
		cancel()
	}
}

// cutShort marks the attempt cut short and cancels its request if it is
// armed (else arm will).
func (a *runningAttempt) cutShort() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cut = true
	if a.cancel != nil {
		a.cancel()
	}
}

// wasCut reports whether the attempt was cut short.
func (a *runningAttempt) wasCut() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cut
}

func (s *registry) init() { s.bySub = map[string]map[*runningAttempt]struct{}{} }

// add registers an attempt of a subscription's delivery; arm gives it the
// function that cancels its request.
func (s *registry) add(sub string) *runningAttempt {
	a := &runningAttempt{done: make(chan struct{})}
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
func (s *registry) remove(sub string, a *runningAttempt) {
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

// cancelSub cuts short every registered attempt of sub and returns them.
func (s *registry) cancelSub(sub string) []*runningAttempt {
	s.mu.Lock()
	out := make([]*runningAttempt, 0, len(s.bySub[sub]))
	for a := range s.bySub[sub] {
		out = append(out, a)
	}
	s.mu.Unlock()
	for _, a := range out {
		a.cutShort()
	}
	return out
}

// StopSubscription cuts short the attempts in progress for a subscription
// that was deleted (or no longer wants pushes) and waits, until ctx ends,
// for them to return. Call it after the catalog no longer has the
// subscription: an attempt registers itself before it reads the catalog,
// so every attempt either is cancelled here or finds the subscription gone
// and sends nothing.
func (a *Attempter) StopSubscription(ctx context.Context, subscriptionID string) error {
	for _, r := range a.running.cancelSub(subscriptionID) {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
