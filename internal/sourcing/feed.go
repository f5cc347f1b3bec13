package sourcing

import (
	"context"
	"errors"
)

// feed is what a client library's callbacks hand over to a reader's next
// (NATS, MQTT): the messages, at most the bound the broker is told (the
// channel holds them all, so a callback never waits for long), and the
// first error of the connection.
type feed[T any] struct {
	msgs chan T
	errs chan error
	done chan struct{} // closed by stop: a callback waiting to hand a message over returns
	conv func(T) message
}

func newFeed[T any](max int, conv func(T) message) *feed[T] {
	return &feed[T]{msgs: make(chan T, max), errs: make(chan error, 1), done: make(chan struct{}), conv: conv}
}

// put hands m over to next, or drops it once the reader stopped.
func (f *feed[T]) put(m T) {
	select {
	case f.msgs <- m:
	case <-f.done:
	}
}

// fail passes an error of the connection to next (the first one kept).
func (f *feed[T]) fail(err error) {
	select {
	case f.errs <- err:
	default:
	}
}

// stop ends the puts waiting.
func (f *feed[T]) stop() { close(f.done) }

// errEnded is next's error when the client's connection ended without
// saying why.
var errEnded = errors.New("the connection ended")

// next waits for a message (or an error, ctx's end, or ended closing) and
// returns it with those ready behind it, at most max in all.
func (f *feed[T]) next(ctx context.Context, max int, ended <-chan struct{}) ([]message, error) {
	var batch []message
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-f.errs:
		return nil, err
	case <-ended:
		return nil, errEnded
	case m := <-f.msgs:
		batch = append(batch, f.conv(m))
	}
	for len(batch) < max {
		select {
		case m := <-f.msgs:
			batch = append(batch, f.conv(m))
		default:
			return batch, nil
		}
	}
	return batch, nil
}
