package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSURL is the NATS server with JetStream the nats scenario publishes
// through: the machine's (docs/destinations.md).
const NATSURL = "nats://127.0.0.1:4222"

// natsType is the type of the nats scenario's events.
const natsType = "bench.nats"

// natsScenario: one subscription whose destination is a JetStream subject
// of a stream the scenario makes on NATSURL (deleted after), structured
// mode (the body is the CloudEvent, counted as a webhook receiver counts
// it); the steady-batch load (--events, --batch a request, from
// --publishers) published to it, a JetStream consumer counting what the
// stream holds. Each delivery is a JetStream publish acknowledged by its
// PubAck; latency is publish → the consumer's receipt. Its deliveries/s
// are compared with steady-batch's in the same invocation
// (compareNATSPush): a figure, not a budget line.
func natsScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	subject, name := "herald.bench."+tag, "HERALDBENCH"+tag
	nc, err := nats.Connect(NATSURL, nats.Timeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("nats scenario: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("nats scenario: creating stream %s: %w", name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		js.DeleteStream(dctx, name)
	}()
	dest, _ := json.Marshal(map[string]any{"type": "nats", "url": NATSURL, "subject": subject, "jetstream": true, "mode": "structured"})
	id, err := e.api.createSubscription(ctx, subscription{Name: "nats", EventTypes: []string{natsType}, Destination: dest})
	if err != nil {
		return err
	}
	// sink stands for the stream's consumer in the phase's accounting; it
	// is never started.
	sink := &Receiver{URL: "nats:" + id}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { sink.record(m.Data(), time.Now().UnixNano()) })
	if err != nil {
		return err
	}
	defer cc.Stop()
	l := &load{prefix: prefix(e.name, "main"), events: s.Events, batch: s.Batch, publishers: s.Publishers,
		data: eventData(s.PayloadBytes), typeOf: func(int) string { return natsType }}
	lat := &recorder{}
	p := &phase{load: l, expect: map[*Receiver]int{sink: l.events}, lat: map[*Receiver]*recorder{sink: lat}, settle: true}
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		res.Phases = append(res.Phases, pr.result("", []*Receiver{sink}, l.events, lat))
	}
	return err
}

// compareNATSPush adds to each nats result its deliveries/s as a share of
// steady-batch's (on Herald, the same run) in the same invocation, a
// figure: the lead sets a budget line from it.
func compareNATSPush(results []Result) {
	for i := range results {
		r := &results[i]
		if r.Scenario != "nats" || r.Target == targetBaseline || !r.OK || len(r.Phases) == 0 {
			continue
		}
		push := steadyBatchOf(results, r.Run)
		if push == nil || !push.OK || len(push.Phases) == 0 || push.Phases[0].DeliveriesPerSec <= 0 {
			r.Notes = append(r.Notes, "no ratio to steady-batch: it did not run (and finish) in this invocation (--scenario steady-batch,nats)")
			continue
		}
		r.figure("deliveries/s vs. steady-batch's", r.Phases[0].DeliveriesPerSec/push.Phases[0].DeliveriesPerSec*100, "%")
	}
}
