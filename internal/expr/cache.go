package expr

import "sync"

// Compiled is a subscription's compiled expressions: nil where it has
// none.
type Compiled struct {
	Transform *Transform
	Filter    *Filter
}

// Cache keeps each subscription's expressions compiled, for its latest
// version: Get compiles a subscription's once per version, however many
// goroutines ask at once, and every caller shares the programs. It keeps
// one entry a subscription (the newest version asked for) until Forget. A
// Cache is safe for concurrent use; its zero value is empty and ready.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
}

// cacheEntry is one subscription version's compilation, done once.
type cacheEntry struct {
	version           int64
	transform, filter string
	once              sync.Once
	compiled          *Compiled
	err               error
}

// Get is the compiled transform and filter expression (each "" for none)
// of version of subscription id. An expression that no longer compiles
// (the create or update checked it) fails every Get of that version with
// its *CompileError. The sources are part of the key: a caller passing
// other sources for the same version compiles anew.
func (c *Cache) Get(id string, version int64, transform, filter string) (*Compiled, error) {
	e := c.entry(id, version, transform, filter)
	e.once.Do(func() { e.compiled, e.err = compileBoth(transform, filter) })
	return e.compiled, e.err
}

// entry is the cache entry of id's version and sources, made (replacing
// any other of id) when there is none.
func (c *Cache) entry(id string, version int64, transform, filter string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e != nil && e.version == version && e.transform == transform && e.filter == filter {
		return e
	}
	if c.entries == nil {
		c.entries = make(map[string]*cacheEntry)
	}
	e = &cacheEntry{version: version, transform: transform, filter: filter}
	c.entries[id] = e
	return e
}

// Forget drops subscription id's entry (a deleted subscription's).
func (c *Cache) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}

// Len is how many subscriptions the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// compileBoth compiles transform and filter ("" skips one).
func compileBoth(transform, filter string) (*Compiled, error) {
	var out Compiled
	var err error
	if transform != "" {
		if out.Transform, err = CompileTransform(transform); err != nil {
			return nil, err
		}
	}
	if filter != "" {
		if out.Filter, err = CompileFilter(filter); err != nil {
			return nil, err
		}
	}
	return &out, nil
}
