package eventtype

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/startstop"
)

// Loader is what the catalog reads of the store: every event type
// (archived ones included, at most MaxEventTypes) and the version that
// every event type write advances.
type Loader interface {
	EventTypesVersion(ctx context.Context) (int64, error)
	AllEventTypes(ctx context.Context) ([]EventType, error)
}

// DefaultRecheck is how often a Catalog reads the store's event types
// version: a catalog write on another node takes effect here at most this
// long (plus one store read) after it; on the node that made it, at once
// (the writer calls Refresh).
const DefaultRecheck = time.Second

// Catalog is the event types as a publish checks them: each type's schema
// versions compiled once and shared by every check, read without a lock
// from an immutable snapshot. Refresh (every recheck while started, and
// after each local write) reloads the types when the store's version moved
// and compiles only the versions it had not compiled before (a version
// never changes). It is safe for concurrent use.
type Catalog struct {
	src  Loader
	log  *slog.Logger
	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // one Refresh at a time
	loop *startstop.Loop
}

// snapshot is the catalog as of one store version.
type snapshot struct {
	version int64
	types   map[string]*entry
	names   []string // sorted: the nearest name to an unknown type
}

// entry is one type, compiled.
type entry struct {
	name     string
	archived bool
	versions map[int]*Schema // those that compiled
	newest   int             // the highest stored version, 0: none
	byID     map[string]int  // a version's $id → the version
}

// NewCatalog returns an empty catalog reading src; Start keeps it current
// (every recheck; DefaultRecheck when 0).
func NewCatalog(src Loader, clk clock.Clock, recheck time.Duration, log *slog.Logger) *Catalog {
	if clk == nil {
		clk = clock.Real{}
	}
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{src: src, log: log}
	c.snap.Store(&snapshot{types: map[string]*entry{}})
	c.loop = startstop.NewPeriodic("event types refresh", clk, recheck, func(ctx context.Context) {
		if err := c.Refresh(ctx); err != nil {
			c.log.Warn("reading the event types", "err", err)
		}
	})
	return c
}

// Start refreshes the catalog every recheck until Stop.
func (c *Catalog) Start(ctx context.Context) error { return c.loop.Start(ctx) }

// Stop ends the refreshes.
func (c *Catalog) Stop() { c.loop.Stop() }

// Started and Stopped are the refresh loop's signals (startstop.Service).
func (c *Catalog) Started() <-chan struct{} { return c.loop.Started() }
func (c *Catalog) Stopped() <-chan struct{} { return c.loop.Stopped() }

// Refresh reads the store's event types version and, when it moved since
// the snapshot's, every event type, compiling the versions not compiled
// before; a stored version that does not compile (it did when written, so
// a validator change) is left out, logged, and the type keeps its newest
// number, so events asking for it are told it is unknown.
func (c *Catalog) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snap.Load()
	v, err := c.src.EventTypesVersion(ctx)
	if err != nil {
		return err
	}
	if v == old.version && old.version != 0 {
		return nil
	}
	ts, err := c.src.AllEventTypes(ctx)
	if err != nil {
		return err
	}
	next := &snapshot{version: v, types: make(map[string]*entry, len(ts)), names: make([]string, 0, len(ts))}
	for _, t := range ts {
		next.types[t.Name] = c.compile(t, old.types[t.Name])
		next.names = append(next.names, t.Name)
	}
	slices.Sort(next.names)
	c.snap.Store(next)
	return nil
}

// compile makes t's entry, taking the versions old compiled already.
func (c *Catalog) compile(t EventType, old *entry) *entry {
	e := &entry{name: t.Name, archived: t.Archived(), newest: t.Newest(),
		versions: make(map[int]*Schema, len(t.Schemas)), byID: map[string]int{}}
	for v, raw := range t.Schemas {
		s := (*Schema)(nil)
		if old != nil {
			s = old.versions[v]
		}
		if s == nil {
			var err error
			if s, err = Compile(raw); err != nil {
				c.log.Warn("a stored schema does not compile; events of its version are not checked against it",
					"type", t.Name, "version", v, "err", err)
				continue
			}
		}
		e.versions[v] = s
		if s.ID != "" {
			e.byID[s.ID] = v
		}
	}
	return e
}

// Len returns how many types the catalog holds.
func (c *Catalog) Len() int { return len(c.snap.Load().types) }

// Has reports whether the catalog holds the type name (archived or not).
func (c *Catalog) Has(name string) bool { return c.snap.Load().types[name] != nil }

// Nearest returns the catalog's name nearest to name (fewest edits, in
// any letter case), "" when the catalog is empty.
func (c *Catalog) Nearest(name string) string { return Nearest(name, c.snap.Load().names) }

// Schema returns version v of the type name, compiled, and whether there
// is one.
func (c *Catalog) Schema(name string, v int) (*Schema, bool) {
	e := c.snap.Load().types[name]
	if e == nil {
		return nil, false
	}
	s, ok := e.versions[v]
	return s, ok
}

// String describes the catalog for logs.
func (c *Catalog) String() string {
	s := c.snap.Load()
	return fmt.Sprintf("event types at version %d: %d types", s.version, len(s.types))
}

// Loops returns the catalog's refresh loop (for tests that follow it).
func (c *Catalog) Loops() []*startstop.Loop { return []*startstop.Loop{c.loop} }
