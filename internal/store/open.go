package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/redact"
)

// Choosing a backend. A --store value names the backend that opens it: a
// word ("sqlite") or a URL of one of a backend's schemes ("postgres://…").
// Each backend registers the values it opens from its package's init
// (Register), the way database/sql drivers do, and the binary imports the
// backends it ships (internal/store/backends); Parse and Open are the one
// place that tells the values apart. Package store imports no backend.

// Options are what Open gives the backend it picks. A backend takes the
// fields that apply to it and leaves the others; a zero field takes the
// backend's own default (its Options' doc says which).
type Options struct {
	// Logger receives the store's warnings. Nil discards them.
	Logger *slog.Logger
	// Clock is the time a store compares leases with when a method takes
	// none (PostgreSQL's DueEndpoints and NextDue). Nil: the real clock.
	Clock clock.Clock
	// OnQueued, when set, is told of the subscriptions whose deliveries
	// became receivable (see the backends' Options.OnQueued). It must not
	// block.
	OnQueued func(subscriptionIDs []string)
	// MaxSubscriptionsPerAccount is the most subscriptions one account may
	// hold (a *SubscriptionLimitError past it); 0 sets no limit.
	MaxSubscriptionsPerAccount int
	// DataDir is the directory the embedded store keeps its database file
	// in (SQLite).
	DataDir string
	// MaxConns is the size of the connection pool (PostgreSQL).
	MaxConns int
	// StatementTimeout bounds every statement (PostgreSQL).
	StatementTimeout time.Duration
}

// Backend is a store implementation as it registers itself.
type Backend struct {
	// Name is how messages name it ("SQLite", "PostgreSQL"): Open's errors
	// say "opening the <Name> store".
	Name string
	// Words are the values it opens as they are, whole ("sqlite").
	Words []string
	// Schemes are the URL schemes it opens ("postgres"): a value that
	// begins with one of them followed by "://", and parses as a URL.
	Schemes []string
	// Usage names its values in the error for a value no backend opens
	// ("sqlite", "a postgres:// URL").
	Usage string
	// Capabilities are those of every store it opens (Store.Capabilities).
	Capabilities Capabilities
	// Open opens the store the value names (one of Words or a URL of
	// Schemes) with o.
	Open func(ctx context.Context, value string, o Options) (Store, error)
	// Descriptors is how many file descriptors a store it opens with o
	// holds at most.
	Descriptors func(o Options) int
}

// UnknownURLError is the error of Parse and Open for a value no registered
// backend opens. It quotes the value with its password redacted
// (RedactedURL) and says what the backends open: `"mysql://u:xxxxx@h/db":
// want sqlite or a postgres:// URL`.
type UnknownURLError struct{ URL string }

func (e *UnknownURLError) Error() string {
	usage := Usage()
	if usage == "" {
		return fmt.Sprintf("%q: no store backend is registered (import internal/store/backends)", redact.URL(e.URL))
	}
	return fmt.Sprintf("%q: want %s", redact.URL(e.URL), usage)
}

// URLSyntaxError is the error of Parse and Open for a value that begins
// with a backend's scheme but does not parse as a URL. It does not quote
// the value, which may hold a password.
type URLSyntaxError struct {
	// Backend is the Name of the backend whose scheme the value has.
	Backend string
	// Err is url.Parse's error without the URL (url.Error's Err).
	Err error
}

func (e *URLSyntaxError) Error() string { return "is not a URL: " + e.Err.Error() }

var registry struct {
	mu       sync.RWMutex
	backends []Backend
}

// Register makes b's values open with b. It panics when b opens no value,
// has no Open or Descriptors, or claims a word or scheme another backend
// registered: a programming error, found at start.
func Register(b Backend) {
	if len(b.Words)+len(b.Schemes) == 0 || b.Open == nil || b.Descriptors == nil || b.Name == "" || b.Usage == "" {
		panic(fmt.Sprintf("store: Register(%q): a backend needs a name, a usage, values to open, Open and Descriptors", b.Name))
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, o := range registry.backends {
		for _, w := range b.Words {
			if o.opensWord(w) {
				panic(fmt.Sprintf("store: Register(%q): %q is %s's", b.Name, w, o.Name))
			}
		}
		for _, s := range b.Schemes {
			if o.opensScheme(s) {
				panic(fmt.Sprintf("store: Register(%q): scheme %q is %s's", b.Name, s, o.Name))
			}
		}
	}
	registry.backends = append(registry.backends, b)
	// Embedded stores first, then by name: the order Usage lists them in.
	sort.SliceStable(registry.backends, func(i, j int) bool {
		a, c := registry.backends[i], registry.backends[j]
		if a.Capabilities.Shared != c.Capabilities.Shared {
			return !a.Capabilities.Shared
		}
		return a.Name < c.Name
	})
}

func (b Backend) opensWord(w string) bool {
	for _, x := range b.Words {
		if x == w {
			return true
		}
	}
	return false
}

func (b Backend) opensScheme(s string) bool {
	for _, x := range b.Schemes {
		if x == s {
			return true
		}
	}
	return false
}

// Parse returns the backend that opens value: the one with value among
// its Words, or the one whose scheme value begins with ("scheme://", in
// the case given). A value with a backend's scheme must parse as a URL
// (else a *URLSyntaxError). A value no backend opens is a
// *UnknownURLError.
func Parse(value string) (Backend, error) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, b := range registry.backends {
		if b.opensWord(value) {
			return b, nil
		}
		for _, s := range b.Schemes {
			if !strings.HasPrefix(value, s+"://") {
				continue
			}
			if _, err := url.Parse(value); err != nil {
				// url.Parse's errors are *url.Error, which quotes the URL.
				return Backend{}, &URLSyntaxError{Backend: b.Name, Err: errors.Unwrap(err)}
			}
			return b, nil
		}
	}
	return Backend{}, &UnknownURLError{URL: value}
}

// Usage names the values the registered backends open, embedded stores
// first: "sqlite or a postgres:// URL".
func Usage() string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var names []string
	for _, b := range registry.backends {
		names = append(names, b.Usage)
	}
	return strings.Join(names, " or ")
}

// Open opens the store value names (Parse) with o. Its errors are Parse's,
// or the backend's wrapped as "opening the <Name> store: …".
func Open(ctx context.Context, value string, o Options) (Store, error) {
	b, err := Parse(value)
	if err != nil {
		return nil, err
	}
	s, err := b.Open(ctx, value, o)
	if err != nil {
		return nil, fmt.Errorf("opening the %s store: %w", b.Name, err)
	}
	return s, nil
}
