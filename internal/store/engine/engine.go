// Package engine is Herald's store: the store contract (internal/store)
// implemented once, in Go, above a driver (internal/store/driver) that
// runs each SQL dialect's statements. Every rule of what the store reads
// and writes, and in which transaction, lives here; the SQLite and
// PostgreSQL drivers hold their statements, in queries/*.sql files under
// the names this package uses (Queries lists them), and the mechanisms of
// their databases.
//
// The store moves here a part at a time: a Store serves the methods
// already moved (sessions.go, …) and hands the others to the legacy
// implementation it is given (Legacy), until none is left.
package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/subscription"
)

// Legacy is what a driver's package still implements of store.Store
// itself: the methods not moved here yet, grouped by the part of the
// store they belong to.
type Legacy interface {
	// accounts and keys
	CreateAccount(ctx context.Context, a account.Account) error
	GetAccount(ctx context.Context, id string) (account.Account, error)
	ListAccounts(ctx context.Context, p store.Page) ([]account.Account, string, error)
	UpdateAccount(ctx context.Context, a account.Account) error
	DeleteAccount(ctx context.Context, id string) error
	CreateKey(ctx context.Context, k account.Key) error
	CreateFirstKey(ctx context.Context, k account.Key) (bool, error)
	KeyByHash(ctx context.Context, hash []byte) (account.Key, error)
	GetKey(ctx context.Context, id string) (account.Key, error)
	ListKeys(ctx context.Context, accountID string, p store.Page) ([]account.Key, string, error)
	DeleteKey(ctx context.Context, id string) error
	AuthVersion(ctx context.Context) (int64, error)

	// endpoints, stats and roles
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	ListEndpoints(ctx context.Context, accountID string, state health.State, p store.Page) ([]endpoint.Endpoint, string, error)
	AllEndpoints(ctx context.Context) ([]endpoint.Endpoint, error)
	EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error)
	ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error)
	TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error)
	EndpointID(accountID, url string) string
	DeliveryStats(ctx context.Context, q store.StatsQuery) ([]stats.Row, error)
	DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error)
	TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error)

	// recover jobs, redelivery and retention
	CreateJob(ctx context.Context, j job.Job, max int) (job.Job, error)
	GetJob(ctx context.Context, id string) (job.Job, error)
	ClaimJob(ctx context.Context, owner string, now, until time.Time) (job.Job, bool, error)
	RecoverBatch(ctx context.Context, id, owner string, limit int, now time.Time) (job.Job, store.RedriveResult, error)
	DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error)
	Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error)
	Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (store.RedriveResult, error)
	RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (store.RedriveResult, error)
	Cleanup(ctx context.Context, before time.Time, limit int) (int, error)

	// subscriptions, the catalog and subscription states
	CreateSubscription(ctx context.Context, s subscription.Subscription) error
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error)
	ListSubscriptions(ctx context.Context, accountID string, p store.Page) ([]subscription.Subscription, string, error)
	SubscriptionChanges(ctx context.Context, since int64) (store.CatalogChanges, error)
	UpdateSubscription(ctx context.Context, s subscription.Subscription) error
	DeleteSubscription(ctx context.Context, id string, now time.Time) error
	ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (store.RedriveResult, error)
	DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error)

	// the backlog's counts
	CountPending(ctx context.Context) (fresh, retry int64, err error)
	CountBacklog(ctx context.Context, limit int64) (store.Backlog, error)

	// the delivery path: publish, claims and leases, outcomes
	Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error)
	ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease store.Lease) ([]store.Claimed, error)
	DueEndpoints(ctx context.Context) ([]store.EndpointDue, error)
	NextDue(ctx context.Context, endpointID string) (at time.Time, ok bool, err error)
	Release(ctx context.Context, deliveryIDs []string, owner string) error
	ExtendLeases(ctx context.Context, deliveryIDs []string, lease store.Lease) ([]string, error)
	Record(ctx context.Context, outcomes []store.Outcome) (applied []bool, err error)

	// the store itself
	Capabilities() store.Capabilities
	Ping(ctx context.Context) error
	Close() error
}

// Options are what the engine needs to know of the store it serves,
// which the driver's package reads or is given at open.
type Options struct {
	// Logger receives the engine's warnings. Nil discards them.
	Logger *slog.Logger
	// OnQueued is called after a commit with the subscriptions whose
	// deliveries became receivable (store.Options.OnQueued); nil: none.
	OnQueued func(subscriptionIDs []string)
	// MaxSubscriptionsPerAccount bounds the subscriptions of one account
	// (store.SubscriptionLimitError); 0: no limit.
	MaxSubscriptionsPerAccount int
	// EndpointKey is the installation's, read at open: endpoint IDs are
	// derived from it (endpoint.Key.ID).
	EndpointKey endpoint.Key
	// Clock is the time of the methods that take none (DueEndpoints,
	// NextDue on a store whose leases expire). Default clock.Real{}.
	Clock clock.Clock
	// Capabilities are the store's (store.Capabilities): whether it is
	// shared, whether leases expire.
	Capabilities store.Capabilities
}

// Store is store.Store over a driver.
type Store struct {
	Legacy
	drv  driver.Driver
	opts Options
	log  *slog.Logger
}

// New returns the store over drv, handing what is not moved yet to
// legacy. Closing the store closes legacy, which owns drv's database.
func New(drv driver.Driver, legacy Legacy, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{Legacy: legacy, drv: drv, opts: opts, log: log}
}

var _ store.Store = (*Store)(nil)
