// Package catalog is the in-memory view of subscriptions that the publish
// path matches events against and the delivery path reads delivery settings
// from. The store is the source of truth and the only way in: every
// subscription write advances the store's catalog version, and Sync brings
// the catalog up to the store's version by reading only what changed since
// its own (store.SubscriptionStore.SubscriptionChanges). A snapshot carries
// the version it reflects, which the publish path hands to the store so
// that a publish matched against an older view is refused and matched again
// (store.PublishOptions): no node ever commits a publish matched against
// subscriptions older than the ones its commit sees.
package catalog

import (
	"context"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/expr"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Entry is a subscription with its retry policy resolved and its signing
// keys ready to sign with.
type Entry struct {
	subscription.Subscription
	Policy retry.Policy
	// Signer signs its pushes (nil: a subscription without keys, which
	// pushes unsigned).
	Signer *signing.Signer
	// DynamicHeaders are its dynamic headers compiled (nil: none).
	DynamicHeaders []subscription.DynamicHeader
	// PushURL and DeadLetterURL are its URL and its dead-letter URL parsed
	// once, shared read-only by its attempts (nil: none, or one that does
	// not parse, which an attempt then reports).
	PushURL, DeadLetterURL *url.URL
	// Transform is its transform compiled (nil: none): every attempt of
	// this version shares it (internal/attempting).
	Transform  *expr.Transform
	types      map[string]bool // nil: every type
	filter     *filter.Matcher // nil: no advanced filters
	expression *expr.Filter    // nil: no filter_expression
}

// NewEntry resolves s's retry policy and compiles its filters, dynamic
// headers and CEL expressions (subscription.Subscription.ResolvePolicy,
// CompileFilters, CompileDynamicHeaders and CompileExpressions): once per
// subscription version, as the catalog makes an Entry for each.
func NewEntry(s subscription.Subscription) (*Entry, error) {
	p, err := s.ResolvePolicy()
	if err != nil {
		return nil, err
	}
	m, err := s.CompileFilters()
	if err != nil {
		return nil, err
	}
	dh, err := s.CompileDynamicHeaders()
	if err != nil {
		return nil, err
	}
	tr, fx, err := s.CompileExpressions()
	if err != nil {
		return nil, err
	}
	e := &Entry{Subscription: s, Policy: p, Signer: signing.NewSigner(s.Signing), DynamicHeaders: dh, filter: m,
		PushURL: parseURL(s.URL), DeadLetterURL: parseURL(s.Delivery.DeadLetterURL), Transform: tr, expression: fx}
	if len(s.EventTypes) > 0 {
		e.types = make(map[string]bool, len(s.EventTypes))
		for _, t := range s.EventTypes {
			e.types[t] = true
		}
	}
	return e, nil
}

// parseURL parses a push URL; nil for "" or one that does not parse.
func parseURL(s string) *url.URL {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return u
}

// Matches reports whether an event of this type and subject goes to the
// subscription: its type is listed (or the list is empty and the type is not
// an operational herald.* type, in any letter case: event.ReservedTypeName;
// clients cannot publish those), its subject begins and ends as required
// (in any letter case unless SubjectCaseSensitive), and it passes the
// advanced filters and then its filter_expression (read from ev, which is
// parsed at most once whatever the number of subscriptions that read it;
// a nil ev passes neither). An expression that fails to evaluate does not
// match; its cel-go cost is charged to ev's matching budget
// (filter.Event.Charge), TestsPerCostUnit filter tests a unit. Active, deactivated and validating subscriptions match (the
// last two queue their deliveries: see Queues).
func (e *Entry) Matches(typ, subject string, ev *filter.Event) bool {
	why, _ := e.explain(typ, subject, ev, false)
	return why == ""
}

// Explain is Matches with the reason it fails ("" when the event matches)
// and, when an advanced filter failed, its index (else -1): what herald
// filter-test shows a user whose subscription receives nothing.
func (e *Entry) Explain(typ, subject string, ev *filter.Event) (why string, failed int) {
	return e.explain(typ, subject, ev, true)
}

func (e *Entry) explain(typ, subject string, ev *filter.Event, detail bool) (string, int) {
	switch e.State {
	case subscription.StateActive, subscription.StateDeactivated, subscription.StateAwaitingValidation:
	default:
		return "the subscription is " + e.State, -1
	}
	if e.types == nil && event.ReservedTypeName(typ) {
		return "operational (herald.*) events go only to subscriptions that list their type", -1
	}
	if e.types != nil && !e.types[typ] {
		return "its type " + strconv.Quote(typ) + " is not in event_types", -1
	}
	if !hasPrefix(subject, e.SubjectBeginsWith, e.Filters.SubjectCaseSensitive) {
		return "its subject " + strconv.Quote(subject) + " does not begin with subject_begins_with " + strconv.Quote(e.SubjectBeginsWith), -1
	}
	if !hasSuffix(subject, e.SubjectEndsWith, e.Filters.SubjectCaseSensitive) {
		return "its subject " + strconv.Quote(subject) + " does not end with subject_ends_with " + strconv.Quote(e.SubjectEndsWith), -1
	}
	if e.filter != nil {
		if why, i := e.explainAdvanced(ev, detail); why != "" {
			return why, i
		}
	}
	if e.expression != nil {
		return e.explainExpression(ev), -1
	}
	return "", -1
}

// explainAdvanced is explain's part for the advanced filters: "" when they
// pass.
func (e *Entry) explainAdvanced(ev *filter.Event, detail bool) (string, int) {
	if ev == nil {
		return "no event to read the advanced filters from", 0
	}
	if !detail {
		if e.filter.Match(ev) {
			return "", -1
		}
		return "an advanced filter failed", -1
	}
	if i, why := e.filter.Explain(ev); i >= 0 {
		return why, i
	}
	return "", -1
}

// explainExpression is explain's part for the filter_expression: "" when
// the event passes it. The evaluation ends with ev's pacer's context, and
// its cost is charged to ev.
func (e *Entry) explainExpression(ev *filter.Event) string {
	if ev == nil {
		return "no event to read the filter_expression from"
	}
	in, err := ev.ExprInput()
	if err != nil {
		return "filter_expression: " + err.Error()
	}
	ok, cost, err := e.expression.Match(ev.Context(), in)
	ev.Charge(ExpressionTests(cost))
	switch {
	case err != nil:
		return "filter_expression failed: " + err.Error()
	case !ok:
		return "filter_expression is false"
	}
	return ""
}

// TestsPerCostUnit is how many filter tests a unit of a filter
// expression's cel-go cost counts for against a publish's matching
// budget. A unit takes about 5 times as long as a filter test, from 1
// to 30 (measured side by side on a loaded machine: 12 to 35 ns a test;
// 5 to 700 ns a unit, 50 to 150 for most expressions, the most for
// optional values, strings.quote and map keys of large strings), so
// that --max-match-work bounds the time of a publish whose subscriptions
// have expensive expressions about as it does one with advanced filters.
const TestsPerCostUnit = 5

// ExpressionTests is the filter tests a filter expression's evaluation
// that spent cost counts for: TestsPerCostUnit a unit (of at most
// expr.CostLimit units), and one for the evaluation.
func ExpressionTests(cost uint64) int {
	return int(min(cost, expr.CostLimit))*TestsPerCostUnit + 1
}

// hasPrefix is strings.HasPrefix, in any letter case unless sensitive.
func hasPrefix(s, p string, sensitive bool) bool {
	if sensitive {
		return strings.HasPrefix(s, p)
	}
	return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
}

// hasSuffix is strings.HasSuffix, in any letter case unless sensitive.
func hasSuffix(s, p string, sensitive bool) bool {
	if sensitive {
		return strings.HasSuffix(s, p)
	}
	return len(s) >= len(p) && strings.EqualFold(s[len(s)-len(p):], p)
}

// Queues reports whether the subscription's new deliveries are queued
// rather than pushed: a pull subscription's always (for its consumers), a
// push subscription's while it is deactivated (for its consumers, until it
// is reactivated) or awaiting its endpoint's validation (until it passes).
func (e *Entry) Queues() bool {
	return e.DeliveryMode == subscription.ModePull || e.State == subscription.StateDeactivated || e.State == subscription.StateAwaitingValidation
}

// QueueOnFailure reports whether a failed push ends queued (deactivating the
// subscription) rather than dead-lettered: at once with failure policy
// queue, after the retries with a policy that ends with then: queue.
func (e *Entry) QueueOnFailure(retriesLeft bool) bool {
	return e.FailurePolicy == subscription.FailureQueue || !retriesLeft && e.Policy.Then == retry.ThenQueue
}

// QueueReason is the reason (the subscription's StateReason) a failed push
// that QueueOnFailure queues deactivates the subscription with.
func (e *Entry) QueueReason() string {
	if e.FailurePolicy == subscription.FailureQueue {
		return subscription.ReasonPushFailed
	}
	return subscription.ReasonRetriesRanOut
}

// Schema is the subscription's delivery schema (event.SchemaCloudEvents
// when unset).
func (e *Entry) Schema() string {
	if e.Delivery.Schema == "" {
		return event.SchemaCloudEvents
	}
	return e.Delivery.Schema
}

// Batches reports whether the subscription sends several events a request
// (max_events_per_batch above 1).
func (e *Entry) Batches() bool { return e.Delivery.MaxEventsPerBatch > 1 }

// BatchLimits returns the most events a request carries and the preferred
// size of a batch in bytes (64 KiB unless set).
func (e *Entry) BatchLimits() (maxEvents, preferredBytes int) {
	kb := e.Delivery.PreferredBatchSizeKB
	if kb <= 0 {
		kb = DefaultPreferredBatchKB
	}
	return max(e.Delivery.MaxEventsPerBatch, 1), kb << 10
}

// DefaultPreferredBatchKB is a batch's preferred size when the subscription
// sets none.
const DefaultPreferredBatchKB = 64

// Source is where the catalog reads subscription changes: the store.
type Source interface {
	SubscriptionChanges(ctx context.Context, since int64) (store.CatalogChanges, error)
}

// Catalog holds the current entries. It is safe for concurrent use; readers
// get a consistent snapshot without waiting for writers.
type Catalog struct {
	src     Source
	mu      sync.Mutex // serialises Sync
	current atomic.Pointer[Snapshot]
}

// Snapshot is the catalog at one version. It never changes. A sync makes
// the next one from it, sharing what did not change (see Catalog.Sync).
type Snapshot struct {
	// Version is the store's catalog version this snapshot reflects (0:
	// never synced).
	Version int64
	byID    *shardMap[string, *Entry]
	// groups holds, per account, the entries that list each type and
	// those that take every type (groupKey).
	groups *shardMap[groupKey, *group]
}

// groupKey names the entries of one account an event is matched against:
// those listing the type typ, or, with every, those with no type list.
type groupKey struct {
	account, typ string
	every        bool
}

// group is one groupKey's entries in ID order. When some of them has a
// StringIn filter, ix indexes them by its values (filter.Index): an event
// is then checked only against the entries it may pass, however many
// filter it out.
type group struct {
	list []*Entry
	ix   *filter.Index[*Entry] // nil: none is indexed
}

// groupKeys returns the groups e belongs to.
func (e *Entry) groupKeys() []groupKey {
	acc := account.OrDefault(e.AccountID)
	if len(e.EventTypes) == 0 {
		return []groupKey{{account: acc, every: true}}
	}
	keys := make([]groupKey, len(e.EventTypes))
	for i, t := range e.EventTypes {
		keys[i] = groupKey{account: acc, typ: t}
	}
	return keys
}

// New returns an empty catalog that reads from src; call Sync to load it.
func New(src Source) *Catalog {
	c := &Catalog{src: src}
	c.current.Store(&Snapshot{byID: &shardMap[string, *Entry]{}, groups: &shardMap[groupKey, *group]{}})
	return c
}

// Snapshot returns the current snapshot.
func (c *Catalog) Snapshot() *Snapshot { return c.current.Load() }

// Version is the store catalog version the current snapshot reflects.
func (c *Catalog) Version() int64 { return c.current.Load().Version }

// Sync reads what changed in the store since the catalog's version and
// makes it current. A subscription whose stored policy no longer resolves
// is left out and reported in the error (the others are applied). Calls are
// serialised; one that finds nothing new costs one small read. The new
// snapshot shares with the old one everything the changes leave alone: a
// sync costs the changed subscriptions, the groups they are in (an
// account's subscriptions of one event type, or those that take every
// type: rebuilt whole, in ID order) and the shards of the maps it writes
// (shardMap), not the number of subscriptions.
func (c *Catalog) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.current.Load()
	ch, err := c.src.SubscriptionChanges(ctx, old.Version)
	if err != nil {
		return err
	}
	if ch.Version <= old.Version {
		return nil
	}
	next, bad := old.apply(ch)
	c.current.Store(next)
	return bad
}

// apply returns the snapshot ch brings s to (every subscription anew when
// ch is Full), and the last subscription it left out because it did not
// compile (NewEntry).
func (s *Snapshot) apply(ch store.CatalogChanges) (*Snapshot, error) {
	next := &Snapshot{Version: ch.Version, byID: &shardMap[string, *Entry]{}, groups: &shardMap[groupKey, *group]{}}
	if !ch.Full {
		next.byID, next.groups = s.byID.derive(), s.groups.derive()
	}
	// touched holds the groups to rebuild: true for those some entry
	// leaves, false for those that only gain some.
	touched := map[groupKey]bool{}
	gone := map[string]bool{} // the IDs whose previous entries leave their groups
	leave := func(id string) {
		gone[id] = true
		if e := next.byID.get(id); e != nil {
			for _, k := range e.groupKeys() {
				touched[k] = true
			}
			next.byID.delete(id)
		}
	}
	for _, id := range ch.Deleted {
		leave(id)
	}
	var bad error
	added := map[groupKey][]*Entry{}
	for _, sub := range ch.Changed {
		leave(sub.ID)
		e, err := NewEntry(sub)
		if err != nil {
			bad = err
			continue
		}
		next.byID.set(e.ID, e)
		for _, k := range e.groupKeys() {
			if _, ok := touched[k]; !ok {
				touched[k] = false
			}
			added[k] = append(added[k], e)
		}
	}
	matcher := func(e *Entry) *filter.Matcher { return e.filter }
	for k, leaving := range touched {
		old := next.groups.get(k)
		var kept []*Entry
		if old != nil {
			kept = old.list
		}
		if leaving {
			kept = slices.DeleteFunc(slices.Clone(kept), func(e *Entry) bool { return gone[e.ID] })
		}
		in := added[k]
		slices.SortFunc(in, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
		list := mergeByID(kept, in)
		if len(list) == 0 {
			next.groups.delete(k)
			continue
		}
		g := &group{list: list}
		// An entry without advanced filters is never indexed: a group that
		// had no index and gains only such entries needs none.
		if leaving || old == nil || old.ix != nil || slices.ContainsFunc(in, func(e *Entry) bool { return e.filter != nil }) {
			if ix := filter.NewIndex(list, matcher); ix.Indexed() {
				g.ix = ix
			}
		}
		next.groups.set(k, g)
	}
	return next, bad
}

// mergeByID merges a and b, each in ID order, into a new list in ID order
// (a itself when b is empty). It finds b's places in a by binary search
// and copies a in runs, so adding a few entries to a long list costs a copy
// of it, not a comparison per entry.
func mergeByID(a, b []*Entry) []*Entry {
	if len(b) == 0 {
		return a
	}
	out := make([]*Entry, 0, len(a)+len(b))
	for _, e := range b {
		i, _ := slices.BinarySearchFunc(a, e.ID, func(x *Entry, id string) int { return strings.Compare(x.ID, id) })
		out = append(append(out, a[:i]...), e)
		a = a[i:]
	}
	return append(out, a...)
}

// SyncTo syncs when the catalog is older than version v.
func (c *Catalog) SyncTo(ctx context.Context, v int64) error {
	if c.Version() >= v {
		return nil
	}
	return c.Sync(ctx)
}

// Get returns the entry for a subscription ID in the current snapshot, or nil.
func (c *Catalog) Get(id string) *Entry { return c.current.Load().Get(id) }

// Len returns the number of entries.
func (c *Catalog) Len() int { return c.current.Load().byID.n }

// Get returns the entry for a subscription ID, or nil.
func (s *Snapshot) Get(id string) *Entry { return s.byID.get(id) }

// All returns every entry, in no particular order.
func (s *Snapshot) All() []*Entry {
	out := make([]*Entry, 0, s.byID.n)
	for _, e := range s.byID.all() {
		out = append(out, e)
	}
	return out
}

// Match returns the entries of an account ("": account.DefaultID) that an
// event of this type and subject goes to: those listing the type, then
// those taking every type, each group in ID order. Its cost grows with the
// number of the account's candidate subscriptions for the type, not with
// all of them, and not with those whose StringIn filter the event's value
// is not in (they are indexed by their values); each candidate is checked
// once, at a cost linear in the event's size (see filter.Index.Candidates
// and filter.Event.Tested).
//
// The work is paced by ev's filter.Pacer: each candidate checked is
// charged one filter test besides those its filters spend, and once the
// pacer stops the matching (its budget spent, its context ended) Match
// returns the pacer's error (a *filter.WorkError, or the context's) within
// filter.CheckEvery tests. An event without a pacer (or a nil ev) is
// paced by ctx alone, with no budget. Match also looks at ctx before it
// starts.
func (s *Snapshot) Match(ctx context.Context, accountID, typ, subject string, ev *filter.Event) ([]*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	accountID = account.OrDefault(accountID)
	paced := ev // what the work is charged to
	if paced == nil {
		paced = filter.NewEvent(nil)
	}
	if !paced.Paced() {
		paced.PaceBy(filter.NewPacer(ctx, 0, nil))
	}
	var out []*Entry
	check := func(e *Entry) bool {
		if !paced.Charge(1) {
			return false
		}
		if e.Matches(typ, subject, ev) {
			out = append(out, e)
		}
		return paced.Err() == nil
	}
	for _, g := range []*group{s.groups.get(groupKey{account: accountID, typ: typ}), s.groups.get(groupKey{account: accountID, every: true})} {
		if g == nil {
			continue
		}
		if g.ix == nil {
			for _, e := range g.list {
				if !check(e) {
					break
				}
			}
		} else {
			from := len(out)
			for e := range g.ix.Candidates(ev) {
				if !check(e) {
					break
				}
			}
			seg := out[from:]
			sort.Slice(seg, func(i, j int) bool { return seg[i].ID < seg[j].ID })
		}
		if err := paced.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
