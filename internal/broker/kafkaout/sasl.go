package kafkaout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/herald-events/herald/internal/broker"
)

// saslWatch tells a client's SASL exchanges that the broker ended without
// accepting them. Kafka refuses credentials with the error code
// SASL_AUTHENTICATION_FAILED (a Kafka error: broker_refused); a broker
// that instead closes the connection mid-exchange (kfake does) leaves
// franz-go with a bare EOF, which saslWatch names broker_refused too.
type saslWatch struct {
	// unfinished counts the exchanges begun and not accepted.
	unfinished atomic.Int64
}

// wrap returns m with its exchanges watched.
func (w *saslWatch) wrap(m sasl.Mechanism) sasl.Mechanism { return watchedMechanism{m, w} }

// classify is the package's classify, but that a connection closed while
// an exchange was unfinished is broker_refused.
func (w *saslWatch) classify(err error) error {
	if w != nil && w.unfinished.Load() > 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return broker.Refused(fmt.Errorf("the broker closed the connection during SASL authentication (credentials refused): %w", err))
	}
	return classify(err)
}

type watchedMechanism struct {
	sasl.Mechanism
	w *saslWatch
}

func (m watchedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, first, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	m.w.unfinished.Add(1)
	return &watchedSession{Session: s, w: m.w}, first, nil
}

type watchedSession struct {
	sasl.Session
	w    *saslWatch
	done atomic.Bool
}

// Challenge counts the exchange finished once the mechanism says so with
// the broker's last answer.
func (s *watchedSession) Challenge(b []byte) (bool, []byte, error) {
	done, out, err := s.Session.Challenge(b)
	if done && err == nil && s.done.CompareAndSwap(false, true) {
		s.w.unfinished.Add(-1)
	}
	return done, out, err
}
