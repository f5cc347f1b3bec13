package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchNATS is the NATS server with JetStream the source scenario
// publishes to: the one the project's machines run (docs/sources.md).
const benchNATS = "nats://127.0.0.1:4222"

// sourceScenario: steady-batch's events (--events, spread over
// --endpoints subscriptions) published to a JetStream stream, one
// structured CloudEvent a message from --publishers, and read by a NATS
// source of the server, which publishes them through admission (issue 40,
// docs/sources.md); then, on a fresh server, the same events published
// over HTTP as steady-batch does (--batch a request). Its figure: the
// source's deliveries/s as a share of HTTP steady-batch's.
func sourceScenario(ctx context.Context, e *env, res *Result) error {
	phases, err := freshRuns(ctx, e, []string{"nats-source", "http"}, func(i int, name string) (*PhaseResult, error) {
		return sourcePhase(ctx, e, res, name, i == 0)
	})
	if err != nil {
		return err
	}
	ratio := 0.0
	if phases[1].DeliveriesPerSec > 0 {
		ratio = phases[0].DeliveriesPerSec / phases[1].DeliveriesPerSec
	}
	res.figure("deliveries/s, NATS source vs. HTTP steady-batch", ratio*100, "%")
	return nil
}

// sourcePhase subscribes --endpoints receivers and publishes the load, to
// JetStream through a source (viaNATS) or over HTTP, and waits until every
// event is received and nothing is pending.
func sourcePhase(ctx context.Context, e *env, res *Result, name string, viaNATS bool) (*PhaseResult, error) {
	s := e.cfg.Sizes
	rs, err := typedReceivers(ctx, e, name, s.Endpoints)
	if err != nil {
		return nil, err
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: eventData(s.PayloadBytes)}
	if viaNATS {
		js, subject, err := natsSource(ctx, e, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		l.batch, l.via = 1, func(ctx context.Context, body []byte) error {
			_, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body, Header: nats.Header{"Content-Type": {"application/cloudevents+json"}}})
			return err
		}
	}
	ph, _, err := e.spreadPhase(ctx, res, name, l, rs)
	return ph, err
}

// natsSource makes a JetStream stream of the run's own (deleted when the
// scenario's environment closes: e.cleanups) and a cloudevents NATS source
// of it, and returns a JetStream context and the subject to publish to.
func natsSource(ctx context.Context, e *env, name string) (jetstream.JetStream, string, error) {
	nc, err := nats.Connect(benchNATS, nats.Timeout(5*time.Second))
	if err != nil {
		return nil, "", fmt.Errorf("NATS at %s (the source scenario needs it): %w", benchNATS, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, "", err
	}
	stream := fmt.Sprintf("HERALD_BENCH_%d", time.Now().UnixNano())
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(sctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
		nc.Close()
		return nil, "", err
	}
	e.cleanups = append(e.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
		nc.Close()
	})
	body, err := json.Marshal(map[string]any{"name": name, "type": "nats", "url": benchNATS, "stream": stream, "subject": stream + ".>"})
	if err != nil {
		return nil, "", err
	}
	if err := e.api.expect(ctx, http.MethodPost, "/v1/sources", body, http.StatusCreated); err != nil {
		return nil, "", err
	}
	return js, stream + ".events", nil
}
