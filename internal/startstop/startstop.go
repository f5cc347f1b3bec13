// Package startstop gives every long-running service in Herald the same
// lifecycle: Start(ctx) error, Stop(), and the Started and Stopped
// channels, the shape of River's startstop package. A service embeds
// Base and begins its Start with StartInit (or, when its work is one
// goroutine, starts with StartGo).
//
// The rules every service keeps:
//   - Start returns once the service runs (or with the error that kept it
//     from running); a second Start while it runs does nothing.
//   - Stop ends the service and returns when its goroutines have ended. It
//     may be called without Start, and more than once.
//   - The context given to Start is the service's: cancelling it stops the
//     service as Stop does (without waiting).
package startstop

import (
	"context"
	"sync"
)

// Service is the lifecycle of every long-running component.
type Service interface {
	// Start starts the service; it returns once it runs.
	Start(ctx context.Context) error
	// Started is closed once the service runs.
	Started() <-chan struct{}
	// Stop stops the service and waits until it has stopped.
	Stop()
	// Stopped is closed once the service has stopped.
	Stopped() <-chan struct{}
}

// Base implements the bookkeeping of Service; embed it. Its zero value is
// ready.
type Base struct {
	mu       sync.Mutex
	running  bool
	cancel   context.CancelFunc
	startedc chan struct{}
	stoppedc chan struct{}
}

// StartInit begins a Start. It returns the service's context (cancelled by
// Stop), whether the caller should go on starting (false when the service
// already runs), and two functions: started, to call once the service runs,
// and stopped, to call (deferred in its goroutine) when it has ended.
func (b *Base) StartInit(ctx context.Context) (_ context.Context, shouldStart bool, started, stopped func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		return ctx, false, func() {}, func() {}
	}
	b.running = true
	if b.startedc == nil || isClosed(b.stoppedc) {
		// The first run, or a run after a stop: new channels.
		b.startedc, b.stoppedc = make(chan struct{}), make(chan struct{})
	}
	ctx, b.cancel = context.WithCancel(ctx)
	startedc, stoppedc := b.startedc, b.stoppedc
	var once sync.Once
	return ctx, true,
		func() { once.Do(func() { close(startedc) }) },
		func() {
			once.Do(func() { close(startedc) })
			b.mu.Lock()
			b.running = false
			b.mu.Unlock()
			close(stoppedc)
		}
}

// StartGo is the Start of a service whose work is one goroutine: it runs
// body on a goroutine of its own with the service's context (body must
// return when ctx ends), and the service has stopped when body returns. It
// does nothing when the service already runs.
func (b *Base) StartGo(ctx context.Context, body func(ctx context.Context)) {
	ctx, shouldStart, started, stopped := b.StartInit(ctx)
	if !shouldStart {
		return
	}
	go func() {
		defer stopped()
		started()
		body(ctx)
	}()
}

// init makes the channels of the first run, when asked for before it
// (b.mu held). After a stop they stay closed until the next StartInit.
func (b *Base) init() {
	if b.startedc == nil {
		b.startedc, b.stoppedc = make(chan struct{}), make(chan struct{})
	}
}

// Started is closed once the service runs.
func (b *Base) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	return b.startedc
}

// Stopped is closed once the service has stopped.
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	return b.stoppedc
}

// Stop cancels the service's context and waits until it has stopped; it
// returns at once when the service does not run.
func (b *Base) Stop() {
	b.mu.Lock()
	if !b.running {
		b.mu.Unlock()
		return
	}
	cancel, stopped := b.cancel, b.stoppedc
	b.mu.Unlock()
	cancel()
	<-stopped
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
