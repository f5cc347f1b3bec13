package process

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// sourceCounts is a source's counts as GET /v1/sources/{id} shows them.
type sourceCounts struct {
	Received, Published, Duplicates int64
}

// sourceBroker is the broker side of one source test: a stream, queue or
// topic of the test's own (made by its opener, removed when the test
// ends) that the test fills with messages {"n": i} and a raw source of
// Herald reads.
type sourceBroker interface {
	// body is the body of POST /v1/sources of a raw source reading it.
	body() map[string]any
	// publish publishes messages from..to-1 in order and returns once the
	// broker has acknowledged each.
	publish(from, to int) error
	// eventID is the id of message i's event (docs/sources.md, "raw"),
	// once publish has returned for it.
	eventID(i int) string
	// keeps reports whether messages published before the source's
	// consumer first subscribes are kept for it: a JetStream stream, an
	// AMQP queue and a Kafka topic keep them, an MQTT topic does not.
	keeps() bool
}

// The shape of every broker's SIGKILL test (sourceAcrossSIGKILL).
const (
	// sourceTotal messages are published in all, in chunks of sourceChunk.
	sourceTotal, sourceChunk = 1000, 100
	// sourceEarly of them are published before Herald starts (when the
	// broker keeps them).
	sourceEarly = 300
	// Herald is SIGKILLed once sourceKillAt events have reached the
	// webhook; until then a chunk is published only once the webhook has
	// all but sourceLead of the messages before it, so that at the kill
	// the stream is not over and the source holds messages it has not
	// acknowledged.
	sourceKillAt, sourceLead = 300, 200
	// sourceWait bounds each wait of the test but the last.
	sourceWait = 60 * time.Second
	// sourceResume bounds the wait for every message after the restart:
	// the brokers give what the dead consumer held again within it (NATS
	// after its 10 s ack wait, the others at once; a Kafka group that
	// waited out the dead member's 45 s session timeout would not).
	sourceResume = 30 * time.Second
)

// sourceOpeners make each broker's side of the test.
var sourceOpeners = []struct {
	name string
	open func(t *testing.T) sourceBroker
}{
	{"nats", openNATSBroker},
	{"amqp", openAMQPBroker},
	{"mqtt", openMQTTBroker},
	{"kafka", openKafkaBroker},
}

// TestSourceExactlyOnceAcrossSIGKILL runs sourceAcrossSIGKILL for each
// broker on the embedded SQLite store and on PostgreSQL.
func TestSourceExactlyOnceAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	for _, b := range sourceOpeners {
		t.Run(b.name, func(t *testing.T) {
			t.Run("sqlite", func(t *testing.T) {
				dataDir := t.TempDir()
				sourceAcrossSIGKILL(t, b.open(t), func(t *testing.T, name string) *herald {
					return startHerald(t, name, dataDir, "--node-id", "source-node")
				})
			})
			t.Run("postgres", func(t *testing.T) {
				dbURL := pgtest.SchemaURL(t)
				sourceAcrossSIGKILL(t, b.open(t), func(t *testing.T, name string) *herald {
					return startNode(t, "source-node", dbURL, "--lease", "3s")
				})
			})
		})
	}
}

// sourceAcrossSIGKILL: a raw source reads the broker's messages while a
// publisher keeps publishing them, a chunk at a time, never more than
// sourceLead ahead of the webhook (the first sourceEarly before Herald
// starts when the broker keeps them; otherwise message 0, published
// again until it arrives, tells that the source has subscribed). Herald
// is SIGKILLed once sourceKillAt events have reached the webhook — with
// messages the source has read and not acknowledged, and messages not yet
// published — and started again on the same store as the same node (its
// lease is its own at once) while the publisher publishes the rest.
// Every message must reach the receiver, and each as one event with one
// delivery: messages the broker delivers again after the kill (published,
// not yet acknowledged) are duplicates that make no delivery, and no
// event other than the messages' arrives. Receipts beyond the first of a
// delivery (a push in flight at the kill, attempted again: the push side
// is at-least-once) are allowed and logged.
func sourceAcrossSIGKILL(t *testing.T, b sourceBroker, start func(t *testing.T, name string) *herald) {
	rcv := newReceiver(t, time.Millisecond, false)
	first := 0
	if b.keeps() {
		if err := b.publish(0, sourceEarly); err != nil {
			t.Fatalf("publishing messages 0..%d: %v", sourceEarly-1, err)
		}
		first = sourceEarly
	}
	h1 := start(t, "herald-1")
	subID := h1.createSubscription(t, "source-hook", rcv.URL())
	srcID := createSource(t, h1, b.body())
	if first == 0 {
		waitFor(t, sourceWait, "the source to subscribe (message 0, published again until it arrives)", func() (bool, string) {
			if err := b.publish(0, 1); err != nil {
				return false, err.Error()
			}
			return rcv.stats().Distinct > 0, "message 0 has not arrived"
		})
		first = 1
	}
	killed, done := make(chan struct{}), make(chan int)
	go func() { done <- publishPaced(t, b, rcv, first, killed) }()

	select {
	case <-rcv.reached(sourceKillAt):
	case <-time.After(sourceWait):
		t.Fatalf("only %d messages arrived within %s; want %d before the SIGKILL", rcv.stats().Distinct, sourceWait, sourceKillAt)
	}
	before := sourceCountsOf(t, h1, srcID)
	h1.kill()
	close(killed)
	t.Logf("SIGKILL with %d events received, the source having reported %d messages read", rcv.stats().Distinct, before.Received)
	h2 := start(t, "herald-2")
	if n := <-done; n < sourceTotal {
		t.Fatalf("only %d of %d messages published", n, sourceTotal)
	}
	want, known := make([]string, sourceTotal), make(map[string]bool, sourceTotal)
	for i := range want {
		want[i] = b.eventID(i)
		known[want[i]] = true
	}
	waitFor(t, sourceResume, "every message to arrive after the restart", func() (bool, string) {
		m := rcv.missing(want)
		return len(m) == 0, fmt.Sprintf("%d of %d never arrived, e.g. %v", len(m), sourceTotal, head(m, 5))
	})
	checkSettled(t, h2, subID, rcv, want)
	if u := rcv.unexpected(known); len(u) > 0 {
		t.Errorf("the receiver got %d events that are no message's, e.g. %v (a message delivered again became a new event)", len(u), head(u, 5))
	}
	after := settledCounts(t, h2, srcID)
	if after.Published > sourceTotal {
		t.Errorf("the source counts %d events published for %d messages", after.Published, sourceTotal)
	}
	st := rcv.stats()
	// The counts are reported once a second: those of the last moments
	// before the SIGKILL are lost (docs/sources.md), the messages never.
	// Duplicates are messages the broker delivered again (and, without
	// keeps, message 0 published again) that dedup absorbed.
	t.Logf("source counts after the restart: %+v; receiver: %d pushes, %d duplicate receipts (at-least-once pushes)", after, st.Requests, st.Duplicates)
}

// publishPaced publishes messages first..sourceTotal-1 a chunk at a time,
// each chunk once the receiver has all but sourceLead of the messages
// before it, or at once after killed is closed; it returns how many
// messages were published (fewer than sourceTotal after an error, which
// it reports).
func publishPaced(t *testing.T, b sourceBroker, rcv *receiver, first int, killed <-chan struct{}) int {
	for from := first; from < sourceTotal; from += sourceChunk {
		select {
		case <-rcv.reached(from - sourceLead):
		case <-killed:
		case <-time.After(sourceWait):
			t.Errorf("messages %d.. not published: the receiver had %d events after %s, want %d", from, rcv.stats().Distinct, sourceWait, from-sourceLead)
			return from
		}
		to := min(from+sourceChunk, sourceTotal)
		if err := b.publish(from, to); err != nil {
			t.Errorf("publishing messages %d..%d: %v", from, to-1, err)
			return from
		}
	}
	return sourceTotal
}

// sourcePayload is message i's body.
func sourcePayload(i int) []byte { return fmt.Appendf(nil, `{"n": %d}`, i) }

// sourceWrap is the wrap of every raw source of these tests.
var sourceWrap = map[string]any{"type": "order.placed", "source": "/shop"}

// createSource makes a source of body and returns its id.
func createSource(t *testing.T, h *herald, body map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var src struct{ ID string }
	if code, err := h.do(ctx, http.MethodPost, "/v1/sources", "application/json", raw, &src); err != nil || code != http.StatusCreated {
		t.Fatalf("creating the source: %d %v", code, err)
	}
	return src.ID
}

// sourceCountsOf reads a source's counts.
func sourceCountsOf(t *testing.T, h *herald, id string) sourceCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var src struct{ Counts sourceCounts }
	if _, err := h.do(ctx, http.MethodGet, "/v1/sources/"+id, "", nil, &src); err != nil {
		t.Fatalf("reading the source: %v", err)
	}
	return src.Counts
}

// settledCounts reads a source's counts once they have not changed for
// two report periods (an idle consumer reports within one, docs/sources.md),
// 15 s at most.
func settledCounts(t *testing.T, h *herald, id string) sourceCounts {
	t.Helper()
	last, since := sourceCountsOf(t, h, id), time.Now()
	waitFor(t, 15*time.Second, "the source's counts to settle", func() (bool, string) {
		if c := sourceCountsOf(t, h, id); c != last {
			last, since = c, time.Now()
		}
		return time.Since(since) >= 2*time.Second, fmt.Sprintf("still changing: %+v", last)
	})
	return last
}
