package attempting

import (
	"context"
	"sync"
)

// registry registers the attempts in progress by subscription, so that
// deleting a subscription can cut its attempts short (StopSubscription).
// Registering and unregistering allocate nothing in the steady state: the
// attempts come from a pool and are linked into their subscription's list,
// and a subscription's list is kept for reuse (up to maxFreeLists) once
// its last attempt ends. Its mutex is a leaf of the lock order but for
// the attempts' own (runningAttempt.mu), taken under it by cancelSub.
type registry struct {
	mu    sync.Mutex
	bySub map[string]*subAttempts
	free  []*subAttempts // emptied lists, for reuse
}

// maxFreeLists bounds the emptied subscription lists kept for reuse.
const maxFreeLists = 64

// subAttempts is one subscription's registered attempts. Guarded by
// registry.mu.
type subAttempts struct {
	head *runningAttempt // a doubly linked list through runningAttempt.prev/next
	// cut counts the attempts cut short (cancelSub) still registered;
	// drained, made by the first cancelSub that cut one, is closed when it
	// reaches 0.
	cut     int
	drained chan struct{}
}

// runningAttempt is one registered attempt. It is registered before its
// request's context exists (before the catalog is read: see
// StopSubscription), so cutting it short is remembered: the request is
// cancelled as soon as it is armed with the context's cancel function.
// Once removed it goes back to runningAttempts: its registrant must not
// use it after remove.
type runningAttempt struct {
	prev, next *runningAttempt // in its subscription's list; guarded by registry.mu

	mu     sync.Mutex         // a leaf of the lock order
	cut    bool               // cut short by cancelSub
	cancel context.CancelFunc // cancels its request; nil until arm
}

// runningAttempts are the registry's attempts, reused.
var runningAttempts = sync.Pool{New: func() any { return new(runningAttempt) }}

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
// armed (else arm will). It reports whether the attempt was not cut
// already.
func (a *runningAttempt) cutShort() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	was := a.cut
	a.cut = true
	if a.cancel != nil {
		a.cancel()
	}
	return !was
}

// wasCut reports whether the attempt was cut short.
func (a *runningAttempt) wasCut() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cut
}

func (s *registry) init() { s.bySub = map[string]*subAttempts{} }

// add registers an attempt of a subscription's delivery; arm gives it the
// function that cancels its request.
func (s *registry) add(sub string) *runningAttempt {
	a := runningAttempts.Get().(*runningAttempt)
	s.mu.Lock()
	l := s.bySub[sub]
	if l == nil {
		l = s.newList()
		s.bySub[sub] = l
	}
	a.next = l.head
	if l.head != nil {
		l.head.prev = a
	}
	l.head = a
	s.mu.Unlock()
	return a
}

// newList returns an empty subscription list, reused when one is free.
// Caller holds s.mu.
func (s *registry) newList() *subAttempts {
	if n := len(s.free); n > 0 {
		l := s.free[n-1]
		s.free = s.free[:n-1]
		return l
	}
	return new(subAttempts)
}

// remove unregisters an attempt whose HTTP exchange is over and gives it
// back to the pool.
func (s *registry) remove(sub string, a *runningAttempt) {
	s.mu.Lock()
	if l := s.bySub[sub]; l != nil {
		s.unlink(l, a)
		if a.wasCut() {
			if l.cut--; l.cut == 0 {
				close(l.drained)
				l.drained = nil
			}
		}
		if l.head == nil {
			delete(s.bySub, sub)
			if len(s.free) < maxFreeLists {
				*l = subAttempts{}
				s.free = append(s.free, l)
			}
		}
	}
	s.mu.Unlock()
	*a = runningAttempt{}
	runningAttempts.Put(a)
}

// unlink takes a out of l. Caller holds s.mu.
func (s *registry) unlink(l *subAttempts, a *runningAttempt) {
	if a.prev != nil {
		a.prev.next = a.next
	} else {
		l.head = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	}
	a.prev, a.next = nil, nil
}

// cancelSub cuts short every registered attempt of sub and returns a
// channel closed once every attempt it (or an earlier call) cut short is
// unregistered; nil when none is registered.
func (s *registry) cancelSub(sub string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.bySub[sub]
	if l == nil {
		return nil
	}
	for a := l.head; a != nil; a = a.next {
		if a.cutShort() {
			l.cut++
		}
	}
	if l.cut == 0 {
		return nil
	}
	if l.drained == nil {
		l.drained = make(chan struct{})
	}
	return l.drained
}

// StopSubscription cuts short the attempts in progress for a subscription
// that was deleted (or no longer wants pushes) and waits, until ctx ends,
// for them to return. Call it after the catalog no longer has the
// subscription: an attempt registers itself before it reads the catalog,
// so every attempt either is cancelled here or finds the subscription gone
// and sends nothing.
func (a *Attempter) StopSubscription(ctx context.Context, subscriptionID string) error {
	drained := a.running.cancelSub(subscriptionID)
	if drained == nil {
		return nil
	}
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
