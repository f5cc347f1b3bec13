package sourcing

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/broker/natsout"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
)

// A NATS source reads a JetStream durable pull consumer (the source's
// Durable, filtering its Subject on its Stream), made or updated at each
// connection with explicit acks and MaxAckPending the consumer's bound.
// A message is acknowledged (Ack) once committed; unacknowledged it comes
// again after natsAckWait. The CloudEvents NATS binding (1.0.3):
// binary-mode attributes in ce-* headers, their values percent-encoded
// (event.ParseEncodedBinding decodes them); the datacontenttype in
// ce-datacontenttype, else in content-type (as the CloudEvents Go SDK
// reads it); a content-type of application/cloudevents… is structured
// mode. TLS for a tls:// URL (natsout.TLSOption).

// natsAckWait is how long JetStream waits for an ack before delivering a
// message again: what a consumer that died held comes again to the next
// after this long. A publish that takes longer (the store away) sees its
// messages delivered again meanwhile: duplicates, which dedup absorbs.
const natsAckWait = 10 * time.Second

// natsReader is a NATS source's reader.
type natsReader struct {
	nc      *nats.Conn
	cc      jetstream.ConsumeContext
	stream  string
	feed    *feed[jetstream.Msg]
	pending atomic.Int64
}

// guardDialer dials through the destination guard, each dial within
// dialTimeout (nats.CustomDialer).
type guardDialer struct{ d *destination.Dialer }

func (g guardDialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return g.d.DialContext(ctx, network, address)
}

func (c *consumer) dialer() *destination.Dialer {
	g := c.svc.cfg.Destinations
	return &destination.Dialer{Policy: g.Policy, Resolver: g.Resolver}
}

func openNATS(ctx context.Context, c *consumer) (reader, error) {
	cfg := c.src.Config
	max := c.svc.cfg.MaxInFlight
	r := &natsReader{}
	r.feed = newFeed(max, r.message)
	r.pending.Store(-1)
	nc, err := c.connectNATS(nats.ClosedHandler(func(*nats.Conn) { r.feed.fail(nats.ErrConnectionClosed) }))
	if err != nil {
		return nil, err
	}
	r.nc = nc
	js, err := jetstream.New(nc)
	if err == nil {
		r.stream, err = natsStream(ctx, js, cfg)
	}
	var cons jetstream.Consumer
	if err == nil {
		cons, err = js.CreateOrUpdateConsumer(ctx, r.stream, jetstream.ConsumerConfig{Durable: c.src.DurableName(),
			FilterSubject: cfg.Subject, AckPolicy: jetstream.AckExplicitPolicy, AckWait: natsAckWait, MaxAckPending: max})
	}
	if err == nil {
		r.cc, err = cons.Consume(r.feed.put, jetstream.PullMaxMessages(max),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { r.feed.fail(err) }))
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream consumer %s of stream %q: %w", c.src.DurableName(), r.stream, err)
	}
	return r, nil
}

// connectNATS connects to the source's server (through the destination
// guard, each dial within dialTimeout; TLS as its settings say) with the
// options added. The guard resolves the server's name (SkipHostLookup:
// nats.go would otherwise resolve it with the system's resolver and hand
// the guard addresses only).
func (c *consumer) connectNATS(opts ...nats.Option) (*nats.Conn, error) {
	secure, err := natsout.TLSOption(c.src.Config.Conn)
	if err != nil {
		return nil, err
	}
	opts = append([]nats.Option{nats.Name("herald source " + c.src.ID), nats.Timeout(dialTimeout), secure,
		nats.SetCustomDialer(guardDialer{c.dialer()}), nats.SkipHostLookup()}, opts...)
	nc, err := nats.Connect(c.src.Config.Conn.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	return nc, nil
}

// natsStream is the stream a source reads: its stream, or the one that
// holds its subject.
func natsStream(ctx context.Context, js jetstream.JetStream, cfg source.Config) (string, error) {
	if cfg.Stream != "" {
		return cfg.Stream, nil
	}
	return js.StreamNameBySubject(ctx, cfg.Subject)
}

// forgetNATS deletes a deleted source's durable JetStream consumer when
// Herald named it (herald-<source id>): left, it would keep holding the
// messages of an interest or work-queue stream. A durable the source
// names is the user's, and stays.
func forgetNATS(ctx context.Context, c *consumer) error {
	cfg := c.src.Config
	if cfg.Durable != "" {
		return nil
	}
	nc, err := c.connectNATS()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := natsStream(ctx, js, cfg)
	if err == nil {
		err = js.DeleteConsumer(ctx, stream, c.src.DurableName())
	}
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("deleting JetStream consumer %s: %w", c.src.DurableName(), err)
	}
	return nil
}

// next: the channel holds MaxAckPending (JetStream sends no more
// unacknowledged).
func (r *natsReader) next(ctx context.Context, max int) ([]message, error) {
	return r.feed.next(ctx, max, nil)
}

// message is m as a source message: its id the stream and its sequence.
func (r *natsReader) message(m jetstream.Msg) message {
	out := message{body: m.Data(), raw: m, attrs: map[string]string{}, encoded: true}
	if md, err := m.Metadata(); err == nil {
		out.id = md.Stream + "-" + strconv.FormatUint(md.Sequence.Stream, 10)
		r.pending.Store(int64(md.NumPending))
	}
	for k, vs := range m.Headers() {
		switch lk := strings.ToLower(k); {
		case lk == "content-type" && len(vs) > 0:
			out.contentType = vs[0]
		case strings.HasPrefix(lk, "ce-") && len(vs) > 0:
			out.attrs[lk[3:]] = vs[0]
		}
	}
	natsContentType(&out)
	return out
}

// natsContentType takes the binding's ce-datacontenttype as the content
// type of a binary-mode message (percent-decoded; the content-type header
// stays when it does not decode); a structured-mode message keeps its
// content-type.
func natsContentType(m *message) {
	dct, ok := m.attrs["datacontenttype"]
	if !ok {
		return
	}
	delete(m.attrs, "datacontenttype")
	if mt, _, _ := mime.ParseMediaType(m.contentType); strings.HasPrefix(mt, "application/cloudevents") {
		return
	}
	if v, err := url.PathUnescape(dct); err == nil {
		m.contentType = v
	}
}

func (r *natsReader) ack(_ context.Context, msgs []message) error {
	for _, m := range msgs {
		if err := m.raw.(jetstream.Msg).Ack(); err != nil {
			return fmt.Errorf("acknowledging a JetStream message: %w", err)
		}
	}
	return nil
}

func (r *natsReader) lag() int64 { return r.pending.Load() }

func (r *natsReader) close() {
	r.feed.stop()
	r.cc.Stop()
	r.nc.Close()
}
