package sourcing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/admission"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
)

// message is one broker message as a reader hands it over.
type message struct {
	// id is the broker's stable id of the message: a raw event's id, a
	// dead letter's message id.
	id string
	// attrs are its binary-mode CloudEvents attributes, the binding's
	// prefix removed, and contentType its content type ("" : none).
	attrs       map[string]string
	contentType string
	// encoded: the attrs' values are percent-encoded as the HTTP
	// binding's headers (NATS: event.ParseEncodedBinding).
	encoded bool
	body    []byte
	// raw is the reader's own handle of the message (to acknowledge it).
	raw any
}

// reader is one connection to a broker reading one source's messages.
type reader interface {
	// next waits for a message and returns it with those ready behind
	// it, at most max in all. An error ends the connection.
	next(ctx context.Context, max int) ([]message, error)
	// ack acknowledges msgs (or commits their offsets), a batch next
	// returned, once each is committed or dead-lettered.
	ack(ctx context.Context, msgs []message) error
	// lag is the messages the broker holds for the consumer and has not
	// delivered, as last told (-1: unknown).
	lag() int64
	close()
}

// openers open a reader of each type of source within ctx.
var openers = map[string]func(ctx context.Context, c *consumer) (reader, error){
	source.TypeNATS:  openNATS,
	source.TypeAMQP:  openAMQP,
	source.TypeMQTT:  openMQTT,
	source.TypeKafka: openKafka,
}

// Back-off of a consumer: after a failed connection, and between the
// tries of a publish or store write that failed for a reason that passes.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
	// reportEvery is how often a busy consumer reports its counts; an
	// idle one reports once it has nothing more to read.
	reportEvery = time.Second
)

// consumer runs one source's consumer on this node.
type consumer struct {
	svc *Service
	src source.Source
	log *slog.Logger
	// rep is the report not yet written (the consumer's goroutine's own).
	rep        source.Report
	lastReport time.Time
}

func newConsumer(s *Service, src source.Source) *consumer {
	return &consumer{svc: s, src: src, log: s.cfg.Logger.With("source", src.ID, "type", src.Type), rep: source.Report{Lag: -1}}
}

// run connects and consumes until ctx ends, again after each error with
// back-off, reporting the error.
func (c *consumer) run(ctx context.Context) {
	c.log.Info("source consumer started")
	backoff := minBackoff
	for ctx.Err() == nil {
		read, err := c.consume(ctx)
		if ctx.Err() != nil {
			break
		}
		if read {
			backoff = minBackoff
		}
		c.failed(ctx, err)
		if !c.sleep(ctx, backoff) {
			break
		}
		backoff = min(2*backoff, maxBackoff)
	}
	c.report(context.WithoutCancel(ctx))
	c.log.Info("source consumer stopped")
}

// consume connects and handles batches until an error or ctx ends; read
// says whether it handled a message.
func (c *consumer) consume(ctx context.Context) (read bool, err error) {
	open := openers[c.src.Type]
	if open == nil {
		return false, fmt.Errorf("%s sources are not consumed by this build", c.src.Type)
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	r, err := open(dctx, c)
	cancel()
	if err != nil {
		return false, err
	}
	defer r.close()
	c.svc.cfg.TestSignals.Connected.Signal(c.src.ID)
	for {
		batch, err := c.next(ctx, r)
		if err != nil {
			return read, err
		}
		if err := c.handle(ctx, r, batch); err != nil {
			return read, err
		}
		read, c.rep.Read = true, true
		if len(batch) < c.svc.cfg.MaxInFlight || c.svc.cfg.Clock.Now().Sub(c.lastReport) >= reportEvery {
			c.rep.Lag = r.lag()
			c.report(ctx)
		}
	}
}

// next waits for the reader's next batch. While counts wait to be
// reported (a full batch came within reportEvery of the last report) it
// waits reportEvery at most, reports them and waits again: a consumer
// that goes idle after a full batch still reports what it did.
func (c *consumer) next(ctx context.Context, r reader) ([]message, error) {
	for c.rep.Received > 0 {
		wctx, cancel := context.WithCancel(ctx)
		t := c.svc.cfg.Clock.NewTimer(reportEvery)
		go func() {
			select {
			case <-t.C():
				cancel()
			case <-wctx.Done():
			}
		}()
		batch, err := r.next(wctx, c.svc.cfg.MaxInFlight)
		idle := wctx.Err() != nil && ctx.Err() == nil
		cancel()
		t.Stop()
		if err == nil || !idle {
			return batch, err
		}
		c.rep.Lag = r.lag()
		c.report(ctx)
	}
	return r.next(ctx, c.svc.cfg.MaxInFlight)
}

// handle publishes a batch's events and acknowledges its messages; a
// message that does not parse, or whose event is refused for good, is
// dead-lettered and acknowledged too. An error leaves the batch
// unacknowledged (the broker delivers it again).
func (c *consumer) handle(ctx context.Context, r reader, batch []message) error {
	c.rep.Received += int64(len(batch))
	var evs []event.Event
	var of []int // the message of each event
	for i, m := range batch {
		es, err := c.parse(m)
		if err != nil {
			if err := c.deadLetter(ctx, m, "not parsed: "+err.Error()); err != nil {
				return err
			}
			continue
		}
		for _, e := range es {
			evs, of = append(evs, e), append(of, i)
		}
	}
	if err := c.publish(ctx, batch, evs, of); err != nil {
		return err
	}
	return r.ack(ctx, batch)
}

// parse returns a message's events: its binding's (cloudevents), or one
// event of its body (raw).
func (c *consumer) parse(m message) ([]event.Event, error) {
	cfg := c.src.Config
	if cfg.Format != source.FormatRaw && m.encoded {
		return event.ParseEncodedBinding(m.attrs, m.contentType, m.body)
	}
	if cfg.Format != source.FormatRaw {
		return event.ParseBinding(m.attrs, m.contentType, m.body)
	}
	ct := m.contentType
	if mt, _, _ := mime.ParseMediaType(ct); ct == "" || strings.HasPrefix(mt, "application/cloudevents") {
		ct = "application/octet-stream"
		if len(m.body) > 0 && json.Valid(m.body) {
			ct = "application/json"
		}
	}
	attrs := map[string]string{"specversion": event.SpecVersion, "id": m.id, "source": cfg.Wrap.Source, "type": cfg.Wrap.Type}
	return event.ParseBinding(attrs, ct, m.body)
}

// publish publishes evs (of[i] is the message of evs[i]) in one call,
// trying again while it fails for a reason that passes. When the publish
// path refuses them for good, each is published alone and the messages
// of those refused are dead-lettered.
func (c *consumer) publish(ctx context.Context, batch []message, evs []event.Event, of []int) error {
	if len(evs) == 0 {
		return nil
	}
	err := c.publishOnce(ctx, evs)
	if err == nil || passes(err) || ctx.Err() != nil {
		return err
	}
	dead := map[int]bool{}
	for i, e := range evs {
		err := c.publishOnce(ctx, []event.Event{e})
		switch {
		case err == nil, dead[of[i]]:
		case passes(err) || ctx.Err() != nil:
			return err
		default:
			dead[of[i]] = true
			if err := c.deadLetter(ctx, batch[of[i]], "refused: "+err.Error()); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishOnce publishes evs, trying again while it fails for a reason
// that passes, and counts the results.
func (c *consumer) publishOnce(ctx context.Context, evs []event.Event) error {
	var res []admission.Result
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = c.svc.cfg.Publisher.Publish(ctx, c.src.AccountID, evs)
		return err
	})
	for _, r := range res {
		if r.Duplicate {
			c.rep.Duplicates++
		} else {
			c.rep.Published++
		}
	}
	return err
}

// deadLetter stores m as the source's dead letter, trying again while the
// store is away.
func (c *consumer) deadLetter(ctx context.Context, m message, reason string) error {
	dl := source.NewDeadLetter(c.src.ID, m.id, reason, m.body, c.svc.cfg.Clock.Now())
	c.log.Info("source message dead-lettered", "message", m.id, "reason", reason)
	return c.retry(ctx, func(ctx context.Context) error { return c.svc.cfg.Store.AddSourceDeadLetter(ctx, dl) })
}

// retry calls fn, each call bounded by callTimeout, again with back-off
// while it fails for a reason that passes (passes), until ctx ends.
func (c *consumer) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	for backoff := minBackoff; ; backoff = min(2*backoff, maxBackoff) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := fn(cctx)
		cancel()
		if err == nil || !passes(err) {
			return err
		}
		c.failed(ctx, err)
		if !c.sleep(ctx, backoff) {
			return ctx.Err()
		}
	}
}

// passes reports whether err is one that passes by itself: the store
// away, subscriptions changing under a publish, a call out of time.
func passes(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrClosed) ||
		errors.Is(err, store.ErrStaleCatalog) || errors.Is(err, context.DeadlineExceeded)
}

// failed records err as the source's last error and reports it.
func (c *consumer) failed(ctx context.Context, err error) {
	c.log.Warn("source consumer", "err", redact.Text(err.Error()))
	c.rep.Err, c.rep.ErrAt, c.rep.Read = source.Text(redact.Text(err.Error()), source.MaxReason), c.svc.cfg.Clock.Now(), false
	c.report(ctx)
}

// report writes the pending report; when the store is away its counts
// wait for the next.
func (c *consumer) report(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	c.lastReport = c.svc.cfg.Clock.Now()
	if err := c.svc.cfg.Store.ReportSource(ctx, c.src.ID, c.rep); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("reporting a source's status", "err", err)
		}
		return
	}
	c.rep = source.Report{Lag: c.rep.Lag}
}

// sleep waits d on the service's clock; false when ctx ended first.
func (c *consumer) sleep(ctx context.Context, d time.Duration) bool {
	t := c.svc.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
