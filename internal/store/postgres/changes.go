package postgres

import (
	"context"
	"log/slog"
	"strings"
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

// changeChannel is the notification channel of every Herald schema.
const changeChannel = "herald_changes"

const notifySQL = `SELECT pg_notify('` + changeChannel + `', $1)`

// Kinds of change named in a notification's payload.
const (
	changedCatalog   = "catalog"
	changedEndpoints = "endpoints"
	changedAuth      = "auth"
)

// notify queues a notification of a change of kind in tx: it is sent when
// tx commits.
func (s *Store) notify(ctx context.Context, tx pgx.Tx, kind string) error {
	_, err := tx.Exec(ctx, notifySQL, s.schema+" "+kind)
	return err
}

// changeFeed listens on its own connection and signals, on channels of
// capacity one (several notifications coalesce into one signal), that
// subscriptions, endpoint health, or accounts and keys changed.
type changeFeed struct {
	catalog   chan struct{}
	endpoints chan struct{}
	auth      chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
}

// startChangeFeed starts listening with cfg for the schema's notifications.
func startChangeFeed(cfg *pgx.ConnConfig, schema string, log *slog.Logger) *changeFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &changeFeed{
		catalog:   make(chan struct{}, 1),
		endpoints: make(chan struct{}, 1),
		auth:      make(chan struct{}, 1),
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	go f.run(ctx, cfg, schema, log.With("component", "change-feed"))
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
	cancel()
	if err != nil {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
		return err
	}
	defer conn.Close(context.Background())
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
func (s *Store) SubscriptionsChanged() <-chan struct{} { return s.feed.catalog }

// EndpointsChanged signals when a node committed an endpoint health write,
// or when notifications may have been missed.
func (s *Store) EndpointsChanged() <-chan struct{} { return s.feed.endpoints }

// AuthChanged signals when a node committed an account or key write, or
// when notifications may have been missed.
func (s *Store) AuthChanged() <-chan struct{} { return s.feed.auth }
