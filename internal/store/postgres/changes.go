package postgres

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Nodes tell each other of subscription, endpoint health and account or
// key writes with PostgreSQL's LISTEN/NOTIFY, so that each re-reads what
// changed at once (SubscriptionChanges, EndpointChanges, AuthVersion)
// instead of polling. Every write transaction that advances the catalog,
// endpoints or auth version also runs pg_notify on changeChannel; the
// notification is delivered when (and only if) it commits. Its payload is
// "<schema> catalog", "<schema> endpoints" or "<schema> auth", so
// deployments in different schemas of one database ignore each other's.
//
// A notification is a hint, never the only way to learn of a change:
// readers also re-read on a timer, and a publish checks the catalog version
// in its own transaction. A listener that loses its connection reconnects
// (1 s, doubling to 30 s) and then reports every kind as changed, since it
// may have missed some. Behind PgBouncer in transaction pool mode LISTEN
// does not work; the readers' timers still do.
//
// Deliveries that became receivable (queued: by a publish, a record that
// queued them, a deactivation, a release) are announced on queuedChannel,
// one notification per subscription per transaction, with the payload
// "<schema> <subscription ID>"; the listener hands the ID to
// Options.OnQueued. The node that committed also calls OnQueued itself
// right after its commit (queuedHere), so it never waits for its own
// notification, and then gets the notification too: OnQueued may hear of
// one change twice. Notifications missed while the listener reconnects are
// not replayed (which subscriptions they named is unknown): a waiting
// consumer must also look again on a timer of its own (store.ReceiveResult's
// NextAt, the end of its wait).

// The engine's statements NotifyCatalog, NotifyEndpoints and NotifyQueued
// (queries/subscriptions.sql) send these notifications too, naming the
// channels and kinds below literally, and the schema as current_schema(),
// the one read at open (TestNotifyStatements).

// changeChannel is the notification channel of every Herald schema.
const changeChannel = "herald_changes"

// queuedChannel is the channel of receivable deliveries.
const queuedChannel = "herald_queued"

// Kinds of change named in a notification's payload.
const (
	changedCatalog   = "catalog"
	changedEndpoints = "endpoints"
	changedAuth      = "auth"
)

// changeFeed listens on its own connection and signals, on channels of
// capacity one (several notifications coalesce into one signal), that
// subscriptions, endpoint health, or accounts and keys changed; it passes
// the subscription of each queued notification to onQueued (nil: ignored).
type changeFeed struct {
	catalog   chan struct{}
	endpoints chan struct{}
	auth      chan struct{}
	onQueued  func([]string)
	cancel    context.CancelFunc
	done      chan struct{}
	// listening is closed once the first LISTEN succeeded.
	listening  chan struct{}
	listenOnce sync.Once
}

// startChangeFeed starts listening with cfg for the schema's notifications.
func startChangeFeed(cfg *pgx.ConnConfig, schema string, onQueued func([]string), log *slog.Logger) *changeFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &changeFeed{
		catalog:   make(chan struct{}, 1),
		endpoints: make(chan struct{}, 1),
		auth:      make(chan struct{}, 1),
		onQueued:  onQueued,
		cancel:    cancel,
		done:      make(chan struct{}),
		listening: make(chan struct{}),
	}
	go f.run(ctx, cfg, schema, log.With("component", "change-feed"))
	// The store is opened listening, so that nothing another node commits
	// after Open returns goes unheard (a consumer waiting on this node for
	// another node's publish, say); a database that does not let it listen
	// within 5 s is not waited for (the feed goes on trying; the readers'
	// periodic reads cover the gap).
	select {
	case <-f.listening:
	case <-time.After(5 * time.Second):
		log.Warn("not yet listening for other nodes' changes; going on")
	}
	return f
}

// stop ends the listener and waits for it.
func (f *changeFeed) stop() {
	f.cancel()
	<-f.done
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run keeps a listening connection until ctx ends.
func (f *changeFeed) run(ctx context.Context, cfg *pgx.ConnConfig, schema string, log *slog.Logger) {
	defer close(f.done)
	wait := time.Second
	for ctx.Err() == nil {
		err := f.listen(ctx, cfg, schema)
		if ctx.Err() != nil {
			return
		}
		log.Warn("listening for other nodes' changes; reconnecting", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// listen connects, listens and signals until the connection fails or ctx
// ends.
func (f *changeFeed) listen(ctx context.Context, cfg *pgx.ConnConfig, schema string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+changeChannel)
	}
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+queuedChannel)
	}
	cancel()
	if err != nil {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
		return err
	}
	defer conn.Close(context.Background())
	f.listenOnce.Do(func() { close(f.listening) })
	// Whatever happened while not listening is unknown: re-read all.
	signal(f.catalog)
	signal(f.endpoints)
	signal(f.auth)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s, kind, ok := strings.Cut(n.Payload, " ")
		if !ok || s != schema {
			continue
		}
		if n.Channel == queuedChannel {
			if f.onQueued != nil {
				f.onQueued([]string{kind}) // the subscription ID
			}
			continue
		}
		switch kind {
		case changedCatalog:
			signal(f.catalog)
		case changedEndpoints:
			signal(f.endpoints)
		case changedAuth:
			signal(f.auth)
		}
	}
}

// SubscriptionsChanged signals when another node (or this one) committed a
// subscription write, or when notifications may have been missed.
func (s *backend) SubscriptionsChanged() <-chan struct{} { return s.feed.catalog }

// EndpointsChanged signals when a node committed an endpoint health write,
// or when notifications may have been missed.
func (s *backend) EndpointsChanged() <-chan struct{} { return s.feed.endpoints }

// AuthChanged signals when a node committed an account or key write, or
// when notifications may have been missed.
func (s *backend) AuthChanged() <-chan struct{} { return s.feed.auth }
