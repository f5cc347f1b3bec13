package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/sourcing"
)

// natsURL is the JetStream server every machine of the project runs.
const natsURL = "nats://127.0.0.1:4222"

// jsStream is a JetStream stream of a test's own: a unique name and
// subjects <subject>.>, deleted when the test ends.
type jsStream struct {
	js      jetstream.JetStream
	name    string
	subject string
}

func newJSStream(t *testing.T) *jsStream {
	t.Helper()
	nc, err := nats.Connect(natsURL, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s (start it: see the notes on brokers): %v", natsURL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := ids.New("", time.Now())
	s := &jsStream{js: js, name: "HT_" + id, subject: "ht" + id}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.name, Subjects: []string{s.subject + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, s.name)
	})
	return s
}

// publish publishes msg (acknowledged by JetStream) to the stream's
// subject <subject>.<suffix>.
func (s *jsStream) publish(t *testing.T, suffix string, msg *nats.Msg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg.Subject = s.subject + "." + suffix
	if _, err := s.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// sourceSetup is setup on the wall clock (the consumers read real
// brokers) with the sources service's signals on.
func sourceSetup(t *testing.T) (*bundle, *sourcing.TestSignals) {
	sig := &sourcing.TestSignals{}
	sig.Started.Init(t)
	sig.Connected.Init(t)
	sig.Stopped.Init(t)
	sig.Forgotten.Init(t)
	b := setup(t, func(c *server.Config) {
		c.Clock = clock.Real{}
		c.SourceTestSignals = sig
	})
	return b, sig
}

// eventIDs returns the ids of the events a receiver got (structured
// CloudEvents), counting each.
func eventIDs(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i := range rc.count() {
		var ev struct{ ID string }
		if err := json.Unmarshal(rc.request(i).body, &ev); err != nil {
			t.Fatalf("a delivery that is not a CloudEvent: %s", rc.request(i).body)
		}
		out[ev.ID]++
	}
	return out
}

// getSource reads a source.
func (b *bundle) getSource(id string) sourceRes {
	b.t.Helper()
	var src sourceRes
	if code, raw := b.do("GET", "/v1/sources/"+id, nil, &src); code != http.StatusOK {
		b.t.Fatalf("GET source: %d %s", code, raw)
	}
	return src
}

// TestNATSSourceDelivers: a NATS source's messages, raw and in both modes
// of the CloudEvents binding, reach a webhook subscription once each; a
// garbage message goes to the source's dead letters and the next still
// arrives; the counts say so; paused, the source reads nothing (the
// messages wait in JetStream), and resumed it delivers them.
func TestNATSSourceDelivers(t *testing.T) {
	b, sig := sourceSetup(t)
	st := newJSStream(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".>",
		"stream": st.name}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	if got := sig.Started.WaitOrTimeout(); got != src.ID {
		t.Fatalf("started %s; want %s", got, src.ID)
	}
	structured := `{"specversion": "1.0", "id": "s-1", "source": "/nats", "type": "order.placed", "data": {"n": 1}}`
	st.publish(t, "a", &nats.Msg{Data: []byte(structured), Header: nats.Header{"Content-Type": {"application/cloudevents+json"}}})
	st.publish(t, "a", &nats.Msg{Data: []byte("not an event"), Header: nats.Header{"Content-Type": {"text/plain"}}})
	st.publish(t, "b", &nats.Msg{Data: []byte(`{"n": 2}`), Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"b-2"},
		"ce-source": {"/nats"}, "ce-type": {"order.placed"}, "content-type": {"application/json"}}})
	eventually(t, "two events delivered", func() bool { return rc.count() >= 2 })
	var dls struct {
		Data []struct {
			MessageID string `json:"message_id"`
			Reason    string
		}
	}
	eventually(t, "the counts reported", func() bool {
		s := b.getSource(src.ID)
		return s.Counts.Received == 3 && s.Counts.Published == 2 && s.Counts.DeadLettered == 1
	})
	if code, raw := b.do("GET", "/v1/sources/"+src.ID+"/dead-letters", nil, &dls); code != 200 || len(dls.Data) != 1 ||
		dls.Data[0].MessageID != st.name+"-2" {
		t.Fatalf("dead letters: %d %s", code, raw)
	}
	if got := eventIDs(t, rc); len(got) != 2 || got["s-1"] != 1 || got["b-2"] != 1 {
		t.Fatalf("delivered %v; want s-1 and b-2 once each", got)
	}

	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	if got := sig.Stopped.WaitOrTimeout(); got != src.ID {
		t.Fatalf("stopped %s; want %s", got, src.ID)
	}
	for i := range 3 {
		id := fmt.Sprintf("p-%d", i)
		st.publish(t, "p", &nats.Msg{Data: []byte(`{"specversion": "1.0", "id": "` + id + `", "source": "/nats", "type": "t"}`),
			Header: nats.Header{"Content-Type": {"application/cloudevents+json"}}})
	}
	cons, err := st.js.Consumer(context.Background(), st.name, "herald-"+src.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Unacknowledged: waiting, or sent to the stopped consumer's pull
	// request still open at the server (and sent again after the ack wait).
	eventually(t, "JetStream holding the three published while paused unacknowledged", func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.NumPending+uint64(info.NumAckPending) == 3 && info.AckFloor.Stream == 3
	})
	if rc.count() != 2 {
		t.Fatalf("paused: %d delivered; want still 2", rc.count())
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	eventually(t, "the messages published while paused delivered", func() bool { return rc.count() >= 5 })
	eventually(t, "the lag reported", func() bool { s := b.getSource(src.ID); return s.Lag != nil && *s.Lag == 0 })
	if got := eventIDs(t, rc); len(got) != 5 || got["p-0"] != 1 || got["p-2"] != 1 {
		t.Fatalf("delivered %v; want 5 events once each", got)
	}
}

// n is the order number of a raw test message's data, {"order": n}.
func n(data json.RawMessage) int {
	var v struct{ Order int }
	_ = json.Unmarshal(data, &v)
	return v.Order
}

// TestNATSRawSource: a raw source's messages become events of its wrap's
// type and source with the stream sequence as their id, their body the
// data; a message JetStream delivers again (its consumer deleted and made
// anew, so every message comes again) is a duplicate: nothing is
// delivered twice.
func TestNATSRawSource(t *testing.T) {
	b, sig := sourceSetup(t)
	st := newJSStream(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "hook", "url": rc.URL, "event_types": []string{"order.placed"}})
	var src sourceRes
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".>",
		"format": "raw", "wrap": map[string]any{"type": "order.placed", "source": "/shop"}}, &src); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	for i := range 5 {
		st.publish(t, "o", &nats.Msg{Data: fmt.Appendf(nil, `{"order": %d}`, i)})
	}
	eventually(t, "five events delivered", func() bool { return rc.count() >= 5 })
	for i := range 5 {
		var ev struct {
			ID, Source, Type string
			Data             json.RawMessage
		}
		body := rc.request(i).body
		if err := json.Unmarshal(body, &ev); err != nil || ev.Source != "/shop" || ev.Type != "order.placed" ||
			ev.ID != fmt.Sprintf("%s-%d", st.name, n(ev.Data)+1) {
			t.Fatalf("an event: %s (%v); want the stream sequence as its id", body, err)
		}
	}
	// Every message again: a new durable of the same name starts from the
	// stream's first message.
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	sig.Stopped.WaitOrTimeout()
	if err := st.js.DeleteConsumer(context.Background(), st.name, "herald-"+src.ID); err != nil {
		t.Fatal(err)
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	sig.Started.WaitOrTimeout()
	eventually(t, "the five read again, as duplicates", func() bool { return b.getSource(src.ID).Counts.Duplicates == 5 })
	if got := eventIDs(t, rc); len(got) != 5 || rc.count() != 5 {
		t.Fatalf("delivered %d requests of %d events; want 5 once each", rc.count(), len(got))
	}
}
