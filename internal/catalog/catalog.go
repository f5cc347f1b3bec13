// Package catalog is the in-memory view of subscriptions that the publish
// path matches events against and the dispatcher reads delivery settings
// from. The store is the source of truth: the API writes there first and then
// updates the catalog, and Reload rebuilds it from the store (at start, and
// periodically so that changes made through another node are seen).
package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
)

// Entry is a subscription with its retry policy resolved.
type Entry struct {
	store.Subscription
	Policy retry.Policy
	types  map[string]bool // nil: every type
}

// NewEntry resolves s's retry policy and matcher.
func NewEntry(s store.Subscription) (*Entry, error) {
	var spec retry.Spec
	if len(s.RetryPolicy) > 0 {
		if err := json.Unmarshal(s.RetryPolicy, &spec); err != nil {
			return nil, fmt.Errorf("subscription %s: retry_policy: %w", s.ID, err)
		}
	}
	p, err := retry.Resolve(spec)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: retry_policy: %w", s.ID, err)
	}
	e := &Entry{Subscription: s, Policy: p}
	if len(s.EventTypes) > 0 {
		e.types = make(map[string]bool, len(s.EventTypes))
		for _, t := range s.EventTypes {
			e.types[t] = true
		}
	}
	return e, nil
}

// OperationalPrefix starts the types of Herald's own operational events,
// which a subscription receives only when it lists them.
const OperationalPrefix = "herald."

// Matches reports whether an event of this type and subject goes to the
// subscription: its type is listed (or the list is empty and the type is not
// an operational herald.* type) and its subject begins and ends as required.
// Only active subscriptions match.
func (e *Entry) Matches(typ, subject string) bool {
	if e.State != "active" {
		return false
	}
	if e.types == nil && strings.HasPrefix(typ, OperationalPrefix) {
		return false
	}
	if e.types != nil && !e.types[typ] {
		return false
	}
	return strings.HasPrefix(subject, e.SubjectBeginsWith) && strings.HasSuffix(subject, e.SubjectEndsWith)
}

// Catalog holds the current entries. It is safe for concurrent use; readers
// get a consistent snapshot without waiting for writers.
type Catalog struct {
	mu      sync.Mutex // serialises writers
	gen     uint64     // bumped by Put and Remove; guarded by mu
	current atomic.Pointer[snapshot]
}

type snapshot struct {
	byID   map[string]*Entry
	list   []*Entry            // sorted by ID
	byType map[string][]*Entry // entries that list the type, by ID
	any    []*Entry            // entries with no type list, by ID
}

// New returns an empty catalog.
func New() *Catalog {
	c := &Catalog{}
	c.current.Store(&snapshot{byID: map[string]*Entry{}})
	return c
}

// Reload replaces the catalog with the store's subscriptions. A subscription
// whose stored policy no longer resolves is skipped and reported in the error
// (the others are loaded). If Put or Remove ran while the store was being
// read, the read may predate their write, so it is discarded; the next
// Reload catches up.
func (c *Catalog) Reload(ctx context.Context, s store.SubscriptionStore) error {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	subs, err := s.AllSubscriptions(ctx)
	if err != nil {
		return err
	}
	next := &snapshot{byID: make(map[string]*Entry, len(subs))}
	var bad error
	for _, sub := range subs {
		e, err := NewEntry(sub)
		if err != nil {
			bad = err
			continue
		}
		next.byID[e.ID] = e
	}
	next.sort()
	c.mu.Lock()
	if c.gen == gen {
		c.current.Store(next)
	}
	c.mu.Unlock()
	return bad
}

// Put adds or replaces one entry.
func (c *Catalog) Put(e *Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	old := c.current.Load()
	next := &snapshot{byID: make(map[string]*Entry, len(old.byID)+1)}
	for id, x := range old.byID {
		next.byID[id] = x
	}
	next.byID[e.ID] = e
	next.sort()
	c.current.Store(next)
}

// Remove deletes one entry.
func (c *Catalog) Remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	old := c.current.Load()
	next := &snapshot{byID: make(map[string]*Entry, len(old.byID))}
	for k, x := range old.byID {
		if k != id {
			next.byID[k] = x
		}
	}
	next.sort()
	c.current.Store(next)
}

// Get returns the entry for a subscription ID, or nil.
func (c *Catalog) Get(id string) *Entry { return c.current.Load().byID[id] }

// Match returns the entries an event of this type and subject goes to: those
// listing the type, then those taking every type. Its cost grows with the
// number of candidate subscriptions for the type, not with all of them.
func (c *Catalog) Match(typ, subject string) []*Entry {
	snap := c.current.Load()
	var out []*Entry
	for _, group := range [][]*Entry{snap.byType[typ], snap.any} {
		for _, e := range group {
			if e.Matches(typ, subject) {
				out = append(out, e)
			}
		}
	}
	return out
}

// Len returns the number of entries.
func (c *Catalog) Len() int { return len(c.current.Load().list) }

// sort rebuilds the ordered list and the type index from byID.
func (s *snapshot) sort() {
	s.list = s.list[:0]
	for _, e := range s.byID {
		s.list = append(s.list, e)
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].ID < s.list[j].ID })
	s.byType, s.any = map[string][]*Entry{}, nil
	for _, e := range s.list {
		if len(e.EventTypes) == 0 {
			s.any = append(s.any, e)
			continue
		}
		for _, t := range e.EventTypes {
			s.byType[t] = append(s.byType[t], e)
		}
	}
}
