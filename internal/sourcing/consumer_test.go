package sourcing

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/source"
)

// batchReader is a reader that hands out its batches, then nothing until
// ctx ends.
type batchReader struct{ batches [][]message }

func (r *batchReader) next(ctx context.Context, _ int) ([]message, error) {
	if len(r.batches) > 0 {
		b := r.batches[0]
		r.batches = r.batches[1:]
		return b, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (r *batchReader) ack(context.Context, []message) error { return nil }
func (r *batchReader) lag() int64                           { return 0 }
func (r *batchReader) close()                               {}

// reportStore is the Store of a consumer under test: it passes each
// report on.
type reportStore struct {
	Store
	reports chan source.Report
}

func (s reportStore) ReportSource(_ context.Context, _ string, r source.Report) error {
	s.reports <- r
	return nil
}

// acceptAll publishes every event as new.
type acceptAll struct{}

func (acceptAll) Publish(_ context.Context, _ string, evs []event.Event) ([]admission.Result, error) {
	return make([]admission.Result, len(evs)), nil
}

// rawBatch is n raw messages {"n": i}, ids from first.
func rawBatch(first, n int) []message {
	b := make([]message, n)
	for i := range b {
		id := strconv.Itoa(first + i)
		b[i] = message{id: id, body: []byte(`{"n": ` + id + `}`)}
	}
	return b
}

// TestIdleConsumerReportsFullBatch: two full batches come within a
// second, then nothing: the first is reported at once (the first report),
// the second once the consumer has waited reportEvery for more — not
// never, as when only a batch smaller than the bound was reported.
func TestIdleConsumerReportsFullBatch(t *testing.T) {
	const max = 3
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	st := reportStore{reports: make(chan source.Report, 8)}
	svc := &Service{cfg: Config{Store: st, Publisher: acceptAll{}, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		MaxInFlight: max, TestSignals: &TestSignals{}}}
	r := &batchReader{batches: [][]message{rawBatch(0, max), rawBatch(max, max)}}
	openers["test"] = func(context.Context, *consumer) (reader, error) { return r, nil }
	defer delete(openers, "test")
	c := newConsumer(svc, source.Source{ID: "src_idle", Type: "test",
		Config: source.Config{Format: source.FormatRaw, Wrap: &source.Wrap{Type: "t", Source: "/s"}}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = c.consume(ctx) }()
	defer func() { cancel(); <-done }()

	next := func(what string) source.Report {
		t.Helper()
		select {
		case rep := <-st.reports:
			return rep
		case <-time.After(5 * time.Second):
			t.Fatalf("no report %s within 5s", what)
		}
		return source.Report{}
	}
	if rep := next("of the first batch"); rep.Received != max || rep.Published != max {
		t.Fatalf("first report %+v; want %d received and published", rep, max)
	}
	waitTimer(t, clk) // the consumer waits for more, reportEvery at most
	clk.Advance(reportEvery)
	if rep := next("once idle after the second batch"); rep.Received != max || rep.Published != max {
		t.Fatalf("second report %+v; want %d received and published", rep, max)
	}
}

// waitTimer waits (5 s at most) until a timer is set on clk.
func waitTimer(t *testing.T, clk *clock.Fake) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for clk.Timers() == 0 {
		select {
		case <-deadline.C:
			t.Fatal("no timer set within 5s")
		case <-tick.C:
		}
	}
}
