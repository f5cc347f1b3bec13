// Package store defines what Herald keeps durably and the one interface the
// store implements (store/engine) over each of its drivers: the embedded
// SQLite store (store/sqlite) and, for several processes sharing one
// database, PostgreSQL (store/postgres). The conformance suite in
// store/enginetest runs on both.
//
// Writes on the hot path (Publish and Record) are group-committed by the
// implementation: many concurrent callers share one transaction, and each call
// returns only after its own data is durably committed.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/subscription"
)

// Errors every implementation returns (wrapped or not; test with errors.Is).
var (
	ErrNotFound  = errors.New("not found")
	ErrNameTaken = errors.New("name already taken")
	ErrConflict  = errors.New("conflict with the resource's current state")
	ErrClosed    = errors.New("store closed")
	// ErrSubscriptionDeleted: the delivery's subscription no longer exists,
	// so it cannot be made pending again.
	ErrSubscriptionDeleted = errors.New("the subscription was deleted")
	// ErrStaleCatalog: a Publish was matched against subscriptions that have
	// changed since (see PublishOptions). The call wrote nothing; a
	// *StaleCatalogError says the catalog version to catch up to.
	ErrStaleCatalog = errors.New("subscriptions changed since the events were matched")
	// ErrSubscriptionLimit: CreateSubscription found the account already
	// holding as many subscriptions as the store allows one account. The
	// call wrote nothing; a *SubscriptionLimitError says the limit.
	ErrSubscriptionLimit = errors.New("the account holds as many subscriptions as allowed")
	// ErrUnavailable: the store cannot serve the call now, for a reason
	// that passes without anyone changing Herald: the database server is
	// stopped, restarting, unreachable or out of connections, or the disk
	// is full or failing. The call wrote nothing, or (a commit whose
	// answer was lost) what it wrote is as if a crash had come. Both
	// backends classify their errors so (postgres/unavailable.go,
	// sqlite/unavailable.go); callers answer "retry in RetryAfter", never
	// "a bug".
	ErrUnavailable = errors.New("the store is unavailable")
)

// RetryAfter is how long Herald asks a client to wait (HTTP Retry-After,
// whole seconds) before retrying a request refused because the store was
// unavailable (ErrUnavailable, ErrClosed): long enough not to hammer a
// database that is starting, short enough that a client's retry lands soon
// after it is back.
const RetryAfter = 5 * time.Second

// Unavailable wraps err so that errors.Is(err, ErrUnavailable) holds and
// err's own text and chain are kept. Nil stays nil; an err that already
// is ErrUnavailable is returned as is.
func Unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// SubscriptionLimitError is the ErrSubscriptionLimit CreateSubscription
// returns, with the limit it applied.
type SubscriptionLimitError struct{ Limit int }

func (e *SubscriptionLimitError) Error() string {
	return fmt.Sprintf("%v (%d)", ErrSubscriptionLimit, e.Limit)
}

// Is makes errors.Is(err, ErrSubscriptionLimit) true.
func (e *SubscriptionLimitError) Is(target error) bool { return target == ErrSubscriptionLimit }

// StaleCatalogError is the ErrStaleCatalog a Publish returns, with the
// catalog version it found.
type StaleCatalogError struct{ Version int64 }

func (e *StaleCatalogError) Error() string {
	return fmt.Sprintf("%v (catalog version %d)", ErrStaleCatalog, e.Version)
}

// Is makes errors.Is(err, ErrStaleCatalog) true.
func (e *StaleCatalogError) Is(target error) bool { return target == ErrStaleCatalog }

// Store is Herald's durable state. All methods are safe for concurrent use.
type Store interface {
	AccountStore
	SubscriptionStore
	QueueStore
	DeliveryStore
	EndpointStore
	SessionStore
	StatsStore
	JobStore
	EventTypeStore
	SourceStore
	// Capabilities says how the store may be used.
	Capabilities() Capabilities
	// Ping reports whether the store can serve requests (for /readyz).
	Ping(ctx context.Context) error
	// Close flushes pending group commits and releases resources.
	Close() error
}

// Capabilities says what a store can do that changes how Herald runs on it.
type Capabilities struct {
	// Shared: several processes may use the store at once (PostgreSQL).
	// Each then learns of the others' changes through the store.
	Shared bool
	// LeasesExpire: a lease ends at its Until time and another process may
	// then claim the delivery, so holders must renew their leases. When
	// false (SQLite: one process owns the file) a lease lasts until it is
	// released, recorded, or the store is opened again.
	LeasesExpire bool
}

// SubscriptionStore keeps subscriptions and the endpoints (URLs) they use.
type SubscriptionStore interface {
	// CreateSubscription inserts s (ID, CreatedAt, UpdatedAt already set) and
	// the endpoint row for s.URL in its account if it is new (with fresh
	// health, at a new endpoint version: see EndpointStore). ErrNameTaken
	// when the name is used in its account; ErrNotFound when its account
	// does not exist; a *SubscriptionLimitError when the account already
	// holds the most subscriptions the store allows one account (an option
	// of each implementation, MaxSubscriptionsPerAccount; 0: no limit). The
	// count is read in the transaction that inserts, after the lock every
	// subscription write takes, so concurrent creates, on any number of
	// processes sharing the store, never take an account past the limit.
	CreateSubscription(ctx context.Context, s subscription.Subscription) error
	// GetSubscription returns one subscription or ErrNotFound.
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	// SubscriptionByName returns the account's subscription of that name,
	// exactly (names are unique in an account; an empty accountID is
	// account.DefaultID), or ErrNotFound. It seeks the (account_id, name)
	// unique index.
	SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error)
	// ListSubscriptions returns a page of an account's subscriptions (of
	// every account when accountID is empty) in ID order after the cursor
	// (SubscriptionCursor). An item's bytes (MaxPageBytes): its name, URL,
	// event types, subject filters, retry policy and headers.
	ListSubscriptions(ctx context.Context, accountID string, p Page) ([]subscription.Subscription, string, error)
	// SubscriptionChanges returns, read in one snapshot, the subscriptions
	// created or changed and the IDs of those deleted after catalog version
	// since, with the version they bring the reader to. Every subscription
	// write (create, update, delete) advances the catalog version by one in
	// its own transaction. A reader whose since is older than the deletions
	// the store still remembers (or 0) gets Full changes: every subscription.
	SubscriptionChanges(ctx context.Context, since int64) (CatalogChanges, error)
	// UpdateSubscription replaces the stored subscription with the same ID.
	// When the URL changes, in the same transaction: the new URL's endpoint
	// row is created if it is new, the subscription's deliveries still to
	// be attempted (pending or queued) move to it (finished ones keep the
	// endpoint they were made for), and the old URL's endpoint row is
	// deleted if no subscription uses it any more. A subscription never
	// changes accounts: one whose AccountID is not the stored one's is
	// ErrNotFound. The stored State is kept (only a deactivation and
	// ReactivateSubscription change it). ErrNotFound, ErrNameTaken.
	UpdateSubscription(ctx context.Context, s subscription.Subscription) error
	// DeleteSubscription removes the subscription. Its deliveries stay in the
	// log; those still pending or queued end as dropped with reason
	// delivery.ReasonSubscriptionDeleted, in the same transaction, and no Publish
	// committed after it writes a delivery for it (see PublishOptions). Its
	// endpoint's row is deleted in the same transaction if no other
	// subscription uses it. ErrNotFound when absent.
	DeleteSubscription(ctx context.Context, id string, now time.Time) error
}

// DeliveryStore keeps events, deliveries and the attempt log.
type DeliveryStore interface {
	// Publish durably inserts events and, for each event that is not a
	// duplicate, its deliveries, in one group commit. An event whose
	// (account, source, id) is already stored is a duplicate: nothing of it is written
	// and its result says Duplicate. Deliveries with Claimed set are written
	// leased to opts.Lease (the caller holds them in memory); those with
	// Queued set are written queued, receivable at once (a pull or
	// deactivated subscription's); the others are written pending and
	// unleased for the due loader. Results are in input order. When
	// opts guards the match (see PublishOptions) and the guard fails, the
	// call writes nothing and returns a *StaleCatalogError.
	Publish(ctx context.Context, events []NewEvent, opts PublishOptions) ([]PublishResult, error)

	// ClaimDue leases up to limit pending, unleased deliveries of one endpoint
	// whose next attempt is at or before now: first-attempt ("fresh")
	// deliveries first, then retries, each in next_attempt_at order. The
	// returned deliveries carry their event payload.
	ClaimDue(ctx context.Context, endpointID string, now time.Time, limit int, lease Lease) ([]Claimed, error)
	// DueEndpoints returns, for every endpoint with pending unleased
	// deliveries, the earliest next_attempt_at among them.
	DueEndpoints(ctx context.Context) ([]EndpointDue, error)
	// NextDue returns the earliest next_attempt_at among one endpoint's pending
	// unleased deliveries; ok is false when it has none.
	NextDue(ctx context.Context, endpointID string) (at time.Time, ok bool, err error)
	// Release clears the lease of those deliveries still leased to owner
	// that were claimed but will not be attempted by it (shutdown, a closed
	// circuit, the subscription went away), leaving them due for any
	// claimer. Deliveries leased to another owner (taken over) are left alone.
	Release(ctx context.Context, deliveryIDs []string, owner string) error
	// ExtendLeases moves the lease of those deliveries still pending and
	// leased to lease.Owner to lease.Until, and returns their IDs (in any
	// order). A delivery not returned is no longer this owner's: its holder
	// must not attempt it. Stores whose leases never expire (SQLite) still
	// report ownership.
	ExtendLeases(ctx context.Context, deliveryIDs []string, lease Lease) ([]string, error)
	// TryLead makes owner the holder of the named cluster-wide role until
	// `until` if nobody holds it or its holder's term ended before now (or
	// owner already holds it), and reports whether owner holds it. Periodic
	// work that must run once across nodes (retention clean-up) runs on the
	// holder.
	TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error)

	// Record durably applies attempt outcomes in one group commit: it appends
	// each attempt to the log, writes the delivery's new state and clears its
	// lease. An outcome for a delivery that is no longer pending (dropped or
	// redelivered meanwhile) still logs the attempt but leaves the state alone.
	// A queued outcome makes the delivery receivable at once (NextAttemptAt
	// is its NextAttemptAt). An outcome with Deactivate set (applied only
	// when its state change is) also deactivates the delivery's
	// subscription in the same transaction if it is active: state
	// subscription.StateDeactivated at a new catalog version, with
	// DeactivateReason as its StateReason and UpdatedAt moved to the
	// outcome's NextAttemptAt (a millisecond after the UpdatedAt it had, if
	// that is not earlier), and every other pending delivery of it queued
	// (leases cleared). applied says, in input order, whether each
	// outcome's state change applied (the delivery was still pending, and
	// leased to LeaseOwner when that is set): only those changed anything
	// but the attempt log, so only those are to be reported (metrics, log
	// lines, notifications). err set: nothing was written, applied is nil.
	Record(ctx context.Context, outcomes []Outcome) (applied []bool, err error)

	// GetDelivery returns one delivery or ErrNotFound.
	GetDelivery(ctx context.Context, id string) (delivery.Delivery, error)
	// ListDeliveries returns a page of the deliveries matching f, newest
	// first (DeliveryCursor). An item's bytes (MaxPageBytes): its event's id
	// and source.
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]delivery.Delivery, string, error)
	// ListAttempts returns a page of a delivery's attempts, oldest first
	// (NumberCursor). An item's bytes (MaxPageBytes): its error and
	// response body.
	ListAttempts(ctx context.Context, deliveryID string, p Page) ([]delivery.Attempt, string, error)
	// ListDeadLetters returns a page of dead-lettered deliveries with their
	// events, newest first (DeliveryCursor). An item's bytes
	// (MaxPageBytes): its event's id, source, type, subject and payload.
	ListDeadLetters(ctx context.Context, f DeadLetterFilter) ([]DeadLetter, string, error)
	// ListQueued returns a page of the queued deliveries matching f (its
	// Status is taken as delivery.StatusQueued) with their events, newest first
	// (DeliveryCursor). An item's bytes (MaxPageBytes): as
	// ListDeadLetters'.
	ListQueued(ctx context.Context, f DeliveryFilter) ([]DeadLetter, string, error)
	// GetEvent returns a stored event's payload by its store sequence.
	GetEvent(ctx context.Context, seq int64) (StoredEvent, error)

	// Redeliver makes one delivery due at now with a fresh attempt budget
	// (RoundAttempts 0, RoundStart now, FirstFailure cleared, Receives 0),
	// whatever its status, on its subscription's current endpoint (the
	// subscription may have moved to another URL since the delivery was
	// made): pending, or queued when the subscription is a pull or a
	// deactivated one. ErrNotFound; ErrConflict when it is pending and leased (an
	// attempt is in progress); ErrSubscriptionDeleted when its subscription
	// no longer exists (nothing changes).
	Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error)
	// Redrive does what Redeliver does to the dead-lettered deliveries of a
	// subscription (all of them, or only ids) and returns how many it moved
	// and the endpoint they now belong to (the subscription's).
	Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (RedriveResult, error)
	// RedriveIDs does what Redrive does to those of ids that name
	// dead-lettered deliveries of the account (an empty accountID is
	// account.DefaultID) whose subscription still exists, whichever
	// subscriptions they belong to; it ignores the others.
	RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (RedriveResult, error)

	// Cleanup deletes events published before `before` whose deliveries are
	// all finished (delivered, dead-lettered or dropped), with those
	// deliveries and their attempts, at most limit events per call. It
	// returns how many events it deleted.
	Cleanup(ctx context.Context, before time.Time, limit int) (int, error)
	// CountPending returns the number of pending deliveries by lane. It
	// reads an index entry per pending delivery, so it takes time in
	// proportion to the backlog (the metrics' gauge; see CountBacklog for
	// a page).
	CountPending(ctx context.Context) (fresh, retry int64, err error)
	// CountBacklog counts what CountPending and CountQueued count, each of
	// its three counts stopping at limit (a count equal to limit means
	// limit or more), so that it reads at most about 3 × limit index
	// entries however large the backlog: a count a page may show (the
	// console's overview). A limit below 1 counts nothing (zeros).
	CountBacklog(ctx context.Context, limit int64) (Backlog, error)
	// CountPendingOf counts the pending deliveries (both lanes, leased or
	// not) of the endpoints endpointIDs together (an ID listed twice counts
	// once), stopping at limit (a count equal to limit means limit or
	// more): it reads at most about limit index entries of the lanes'
	// indexes however large those endpoints' backlog, and one index seek
	// per endpoint (the console's overview counts what the endpoints not
	// enabled hold with it). A limit below 1, or no endpoint, counts
	// nothing (0).
	CountPendingOf(ctx context.Context, endpointIDs []string, limit int64) (int64, error)
}

// Backlog is what waits in the store: pending deliveries by lane, leased
// or not (Fresh: no attempt yet; Retry: at least one), and queued ones (a
// pull or deactivated push subscription's, waiting for consumers).
type Backlog struct{ Fresh, Retry, Queued int64 }

// CatalogChanges is what SubscriptionChanges read.
type CatalogChanges struct {
	// Version is the catalog version the changes bring the reader to.
	Version int64
	// Full: Changed holds every subscription and Deleted is empty; the
	// reader replaces what it has.
	Full    bool
	Changed []subscription.Subscription
	Deleted []string
}

// Page asks for one page of a list: the items after Cursor (the last item
// of the page before; "" for the first), at most Size() of them and
// MaxPageBytes of them (see Len). A list method returns the page and the
// cursor of the next, "" when none follows; a cursor not in the list's
// format (IDCursor, NumberCursor) is an ErrInvalidCursor error.
type Page struct {
	Cursor string
	Limit  int
}

// Lease marks deliveries as held by one process until a time.
type Lease struct {
	Owner string
	Until time.Time
}

// PublishOptions are a Publish call's lease and its guard against
// subscription changes. The caller matched the events against its copy of
// the subscriptions, at catalog version CatalogVersion; the guard makes the
// store refuse the call, with a *StaleCatalogError naming the stored
// catalog version, when that match may be out of date:
//   - CatalogVersion > 0: refused when the stored catalog version is newer
//     (a subscription was created, changed or deleted since the match);
//   - CatalogVersion == 0 and RequireSubscriptions: refused when a
//     delivery names a subscription that does not exist;
//   - neither: not guarded (tests and tools).
//
// The check is made inside the write transaction, ordered with every
// subscription write, at the cost of one read per group commit.
type PublishOptions struct {
	Lease                Lease
	CatalogVersion       int64
	RequireSubscriptions bool
}

// NewEvent is an event to publish with the deliveries it fans out to.
type NewEvent struct {
	AccountID   string // "" : account.DefaultID
	ID          string // CloudEvents id
	Source      string
	Type        string
	Subject     string
	Payload     []byte // the event as CloudEvents structured-mode JSON
	PublishedAt time.Time
	// PartitionKey is the event's CloudEvents partitionkey ("" for none):
	// the ordering key of its deliveries to subscriptions that order by
	// key. The store keeps it on those deliveries only.
	PartitionKey string
	// TraceContext is the span context of the event's publish span
	// (tracing.Encode), kept with the event for its attempts; "" (tracing
	// off) is stored as NULL.
	TraceContext string
	// SchemaErrors are how the event breaks its type's schema, when its
	// account checks events with schema_validation warn: a JSON array
	// bounded by eventtype.StoredErrors, nil for none (stored as NULL).
	SchemaErrors []byte
	Deliveries   []NewDelivery
}

// NewDelivery is one (event, subscription) pair to deliver.
type NewDelivery struct {
	ID             string
	SubscriptionID string
	EndpointID     string // "" for a pull subscription's
	Claimed        bool   // written leased to the Publish lease
	Queued         bool   // written queued (not with Claimed)
	// OrderingKey is the event's partitionkey when the subscription orders
	// by key (subscription.Subscription.OrderingKeyOf), "" for none. A
	// keyed delivery must not be Claimed: only a claim may lease it, when
	// it is its key's head (docs/ordering.md).
	OrderingKey string
}

// PublishResult says what Publish did with one event.
type PublishResult struct {
	Seq       int64 // the stored event's sequence (the existing one for a duplicate)
	Duplicate bool
}

// StoredEvent is an event as stored.
type StoredEvent struct {
	Seq         int64
	AccountID   string
	ID          string
	Source      string
	Type        string
	Subject     string
	Payload     []byte
	PublishedAt time.Time
	// SchemaErrors are the event's NewEvent.SchemaErrors, nil for none.
	SchemaErrors []byte
}

// Claimed is a leased delivery with what is needed to attempt it.
type Claimed struct {
	delivery.Delivery
	Payload []byte
	// TraceContext is its event's (NewEvent.TraceContext), "" for none:
	// the parent of its attempts' spans.
	TraceContext string
	// DeadLetter, for a delivery of a dead letter (DeadLetterOf set), is
	// the dead-lettered delivery as it ended (its reason, attempts, last
	// outcome and attempt time), read with the claim. Nil otherwise.
	DeadLetter *delivery.Delivery
}

// EndpointDue is an endpoint's earliest due delivery.
type EndpointDue struct {
	EndpointID string
	NextDue    time.Time
}

// Outcome is the result of one attempt and the delivery's state after it.
// An Attempt.Number of 0 means no attempt was made (the delivery expired
// while held): nothing is logged, and Attempt.StartedAt must carry the
// delivery's previous LastAttemptAt, which the state update writes back.
type Outcome struct {
	Attempt delivery.Attempt
	// The delivery's state after the attempt.
	Status           delivery.Status
	Attempts         int
	RoundAttempts    int
	FirstFailure     time.Time
	NextAttemptAt    time.Time
	LastStatusCode   int
	LastOutcome      string
	DeadLetterReason string
	DeliveredAt      time.Time
	// LeaseOwner, when not empty, guards the state change: it is applied
	// only if the delivery is still pending and still leased by this owner
	// (its lease owner equals LeaseOwner). A process whose lease expired and
	// was taken over by another then only logs its attempt and leaves the
	// new owner's state alone. When empty, any pending delivery is updated.
	LeaseOwner string
	// Deactivate, with Status delivery.StatusQueued, deactivates the delivery's
	// subscription (see Record).
	Deactivate bool
	// DeactivateReason is the deactivated subscription's StateReason
	// (subscription.ReasonPushFailed, subscription.ReasonRetriesRanOut).
	DeactivateReason string
	// DeadLetterCopy, with Status delivery.StatusDeadLettered, is the delivery of
	// the dead letter to the subscription's dead-letter URL: Record inserts
	// it in the same transaction (when the state change applies), pending,
	// due at the attempt's end, with the dead-lettered delivery's
	// subscription, account and event, DeadLetterOf set to its ID.
	DeadLetterCopy *NewDelivery
}

// DeliveryFilter selects deliveries; empty fields match everything.
type DeliveryFilter struct {
	AccountID      string // "": every account
	SubscriptionID string
	Status         delivery.Status
	EventID        string // the CloudEvents id
	// OrderingKey filters by ordering key (delivery.Delivery.OrderingKey);
	// only with SubscriptionID, for which it is an index seek.
	OrderingKey string
	// EndpointID filters by endpoint (a URL of the account); only with
	// Status delivery.StatusQueued, for which it is an index seek.
	EndpointID string
	// Since and Before bound when a delivery was made (its CreatedAt, when
	// its event was published): at or after Since, before Before, to the
	// millisecond; zero times bound nothing. They bound its ID, which
	// begins with that time (ids.New, ids.Floor), so each list above seeks
	// its index over the range (IDRange).
	Since, Before time.Time
	Page
}

// IDRange returns the bounds of f's times as delivery IDs: lo (at or
// after) and hi (before), "" where f sets no bound.
func (f DeliveryFilter) IDRange() (lo, hi string) {
	if !f.Since.IsZero() {
		lo = ids.Floor(ids.Delivery.Prefix, f.Since)
	}
	if !f.Before.IsZero() {
		hi = ids.Floor(ids.Delivery.Prefix, f.Before)
	}
	return lo, hi
}

// DeadLetterFilter selects dead-lettered deliveries.
type DeadLetterFilter struct {
	AccountID      string // "": every account
	SubscriptionID string
	Page
}

// DeadLetter is a dead-lettered delivery with its event.
type DeadLetter struct {
	delivery.Delivery
	Event StoredEvent
}

// RedriveResult says what Redrive moved.
type RedriveResult struct {
	Count     int
	Endpoints []string
}
