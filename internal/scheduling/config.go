package scheduling

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// Config configures the scheduling stage. A zero field takes its value
// from DefaultConfig (Clock, Logger, Metrics and Owner from setDefaults);
// Validate says whether the result makes sense.
type Config struct {
	Store   Store
	Catalog Subscriptions
	// Attempter makes the attempts started (the attempting stage).
	Attempter Attempter
	// Recorder writes the outcomes (the recording stage).
	Recorder Recorder
	// Results are the recording stage's answers, read by the finisher.
	Results Results
	Clock   clock.Clock  // default clock.Real{}
	Logger  *slog.Logger // default discards
	Metrics *Metrics     // default: a Metrics on a private registry
	// Owner names this process in leases; it must be unique among the
	// processes sharing a store (default: host name, process ID and a random
	// suffix).
	Owner string
	// Lease is how long a claimed delivery stays leased (default 30s). The
	// stage renews, every Lease/3, the leases it holds that end within
	// 2·Lease/3 (leases.go); on a shared database another node takes over a
	// delivery whose lease expired (SQLite leases never expire: one process
	// owns the file).
	Lease time.Duration
	// FreshWindow bounds deliveries held from the publish path (default 10,000).
	FreshWindow int
	// LoadWindow bounds deliveries held from the loader (default 10,000).
	LoadWindow int
	// EndpointWindow bounds loader-held deliveries per endpoint (default 512).
	EndpointWindow int
	// EndpointConcurrency is the most attempts in flight per endpoint
	// (default 64); InitialConcurrency is where an endpoint's adaptive limit
	// starts (default 8, at most EndpointConcurrency).
	EndpointConcurrency int
	InitialConcurrency  int
	// Health holds the circuit thresholds (default health.DefaultConfig()).
	Health health.Config
	// Notifier hears of circuit transitions (optional).
	Notifier Notifier
	// FlushInterval is how often this node's endpoint outcomes are merged
	// into the store and, on a shared store, other nodes' changes adopted
	// (default 1s; a local state change is merged at once, and a change
	// announced by the store is adopted at once: HealthChanged).
	FlushInterval time.Duration
	// StoreTimeout bounds each store call the stage makes (default 30s).
	StoreTimeout time.Duration
	// MaxInFlight bounds attempts in flight across endpoints (default 1,024).
	MaxInFlight int
	// PollInterval is the longest the loader sleeps without looking at the
	// store (default 1s); RefreshInterval is how often it rescans every
	// endpoint for due work (default DefaultRefreshInterval, or
	// ExpiringLeasesRefreshInterval on a store whose leases expire).
	PollInterval    time.Duration
	RefreshInterval time.Duration
}

// Defaults of the fields DefaultConfig leaves zero, and of RefreshInterval,
// which depends on the store.
const (
	// DefaultRefreshInterval is the loader's full rescan period.
	DefaultRefreshInterval = 30 * time.Second
	// ExpiringLeasesRefreshInterval is the rescan period on a store whose
	// leases expire (PostgreSQL): a dead node's deliveries are found soon
	// after their leases end.
	ExpiringLeasesRefreshInterval = 5 * time.Second
)

// DefaultConfig returns the stage's defaults: the one place they are set
// (herald serve's flags take theirs from here).
func DefaultConfig() Config {
	return Config{
		Lease:               30 * time.Second,
		FreshWindow:         10_000,
		LoadWindow:          10_000,
		EndpointWindow:      512,
		EndpointConcurrency: 64,
		InitialConcurrency:  8,
		Health:              health.DefaultConfig(),
		FlushInterval:       time.Second,
		StoreTimeout:        30 * time.Second,
		MaxInFlight:         1024,
		PollInterval:        time.Second,
	}
}

// MinLease is the shortest Lease: leases are renewed every third of it.
const MinLease = 3 * time.Second

// Validate reports the first setting that makes no sense, naming it as
// herald serve's flag does. It checks the settings as given, before New
// fills zero fields (setDefaults, for programmatic callers): a zero or
// negative value that New would silently replace is refused here, and so is
// an empty Owner (give DefaultOwner() for the default name).
func (c Config) Validate() error {
	switch {
	case c.Owner == "":
		return errors.New("--node-id must not be empty")
	case len(c.Owner) > maxOwner || strings.ContainsFunc(c.Owner, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("--node-id %q: want at most %d printable characters", c.Owner, maxOwner)
	case c.Lease < MinLease:
		return fmt.Errorf("--lease %v: must be at least %v", c.Lease, MinLease)
	case c.FreshWindow < 1 || c.LoadWindow < 1 || c.EndpointWindow < 1:
		return errors.New("--window must be at least 1")
	case c.EndpointConcurrency < 1:
		return fmt.Errorf("--endpoint-max-concurrency %d: must be at least 1", c.EndpointConcurrency)
	case c.InitialConcurrency < 1:
		return errors.New("the initial endpoint concurrency must be at least 1")
	case c.MaxInFlight < 1:
		return fmt.Errorf("--max-in-flight %d: must be at least 1", c.MaxInFlight)
	case c.FlushInterval <= 0 || c.StoreTimeout <= 0 || c.PollInterval <= 0 || c.RefreshInterval < 0:
		return errors.New("the scheduler's intervals and store timeout must be positive")
	}
	// health.Config.Validate names these three together; each is its own flag.
	for _, t := range []struct {
		flag string
		v    int64
	}{
		{"--health-disable-consecutive", c.Health.DisableConsecutive},
		{"--health-freeze-stale-consecutive", c.Health.FreezeStaleConsecutive},
		{"--health-freeze-consecutive", c.Health.FreezeConsecutive},
	} {
		if t.v < 1 {
			return fmt.Errorf("%s %d: must be at least 1", t.flag, t.v)
		}
	}
	return c.Health.Validate()
}

// maxOwner is the longest Owner Validate accepts.
const maxOwner = 200

// setDefaults fills zero fields from DefaultConfig and the rest; caps says
// what the store can do.
func (c *Config) setDefaults(caps store.Capabilities) {
	d := DefaultConfig()
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.Owner == "" {
		c.Owner = DefaultOwner()
	}
	setZero(&c.Lease, d.Lease)
	setZero(&c.FreshWindow, d.FreshWindow)
	setZero(&c.LoadWindow, d.LoadWindow)
	setZero(&c.EndpointWindow, d.EndpointWindow)
	setZero(&c.EndpointConcurrency, d.EndpointConcurrency)
	setZero(&c.InitialConcurrency, d.InitialConcurrency)
	c.InitialConcurrency = min(c.InitialConcurrency, c.EndpointConcurrency)
	if c.Health == (health.Config{}) {
		c.Health = d.Health
	}
	setZero(&c.FlushInterval, d.FlushInterval)
	setZero(&c.StoreTimeout, d.StoreTimeout)
	setZero(&c.MaxInFlight, d.MaxInFlight)
	setZero(&c.PollInterval, d.PollInterval)
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = DefaultRefreshInterval
		if caps.LeasesExpire {
			c.RefreshInterval = ExpiringLeasesRefreshInterval
		}
	}
}

// setZero sets *p to v when *p is its zero value (or negative).
func setZero[T int | time.Duration | string](p *T, v T) {
	var zero T
	if *p <= zero {
		*p = v
	}
}

// DefaultOwner names this process uniquely for leases: host name, process
// ID and four random bytes.
func DefaultOwner() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "herald"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
