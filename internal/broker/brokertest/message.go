package brokertest

import (
	"testing"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
)

// Binary returns an event of type typ in binary mode: id evt-1, source
// /herald/test, subject orders/42, an extension "tenant" whose value
// holds a space and a non-ASCII letter, JSON data.
func Binary(typ string) broker.Message {
	return broker.Message{
		Attributes: [][2]string{
			{"specversion", "1.0"}, {"id", "evt-1"}, {"source", "/herald/test"}, {"type", typ},
			{"subject", "orders/42"}, {"tenant", "Zoë Ltd"},
		},
		ContentType: "application/json",
		Body:        []byte(`{"order":42}`),
		Fields:      broker.Fields{Type: typ, Subject: "orders/42", Source: "/herald/test"},
	}
}

// Structured returns the same event in structured mode.
func Structured(typ string) broker.Message {
	return broker.Message{
		ContentType: "application/cloudevents+json",
		Body: []byte(`{"specversion":"1.0","id":"evt-1","source":"/herald/test","type":"` + typ +
			`","subject":"orders/42","tenant":"Zoë Ltd","datacontenttype":"application/json","data":{"order":42}}`),
		Fields: broker.Fields{Type: typ, Subject: "orders/42", Source: "/herald/test"},
	}
}

// Pool returns a pool of connectors whose dials allow loopback addresses
// (--allow-private-destinations), closed when the test ends.
func Pool(t testing.TB, connectors map[string]broker.Connector) *broker.Pool {
	return PoolWith(t, connectors, destination.Policy{AllowPrivate: true})
}

// PoolWith is Pool with a destination policy of the test's.
func PoolWith(t testing.TB, connectors map[string]broker.Connector, policy destination.Policy) *broker.Pool {
	p := broker.NewPool(connectors, broker.NewDialFunc(policy, nil))
	t.Cleanup(p.Close)
	return p
}

// WantOutcome fails the test unless err's outcome is want.
func WantOutcome(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("publish succeeded, want %s", want)
	}
	if got := broker.OutcomeOf(err); got != want {
		t.Fatalf("outcome %s (%v), want %s", got, err, want)
	}
}
