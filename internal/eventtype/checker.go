package eventtype

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/logline"
)

// Settings returns an account's schema validation mode and whether it
// publishes catalog types only (account.Settings, read through a cache).
type Settings func(ctx context.Context, accountID string) (mode string, catalogOnly bool, err error)

// Checker checks the events of a publish against the catalog per their
// account's settings (Catalog.Check): the publish path's check
// (admission.Publisher.Schemas), in every publish format. It counts the
// violations it lets through (ModeWarn) in herald_schema_violations_total
// by type (a catalog type: at most MaxEventTypes label values) and logs
// them at warn, coalesced by type (warnLines): at most one line per type
// each WarnLogInterval, saying how many it stands for. It is safe for
// concurrent use.
type Checker struct {
	// MaxWork bounds the schema tests one publish request's checks may
	// cost (Catalog.Check's maxWork; 0: no limit): the server's
	// --max-schema-work. Set it before the first Check.
	MaxWork int
	// Clock times the coalesced warn lines (nil: the real clock). Set it
	// before the first Check.
	Clock      clock.Clock
	warned     warnLines
	catalog    *Catalog
	settings   Settings
	violations *prometheus.CounterVec
	log        *slog.Logger
}

// NewChecker returns a checker of cat whose counter is registered with reg
// (nil: not registered).
func NewChecker(cat *Catalog, settings Settings, reg prometheus.Registerer, log *slog.Logger) *Checker {
	c := &Checker{catalog: cat, settings: settings, log: log,
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_schema_violations_total",
			Help: "Events accepted (schema_validation warn) that break their type's schema in the event-type catalog, by type.",
		}, []string{"type"})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if reg != nil {
		reg.MustRegister(c.violations)
	}
	return c
}

// Check checks evs, published by the account accountID: a *Refusal when
// the request is refused, a *WorkError when checking it would cost more
// than MaxWork (nothing of it may be stored then), else what was found in
// each event (nil when nothing).
func (c *Checker) Check(ctx context.Context, accountID string, evs []event.Event) ([]Checked, error) {
	mode, only, err := c.settings(ctx, accountID)
	if err != nil {
		return nil, err
	}
	out, err := c.catalog.Check(evs, mode, only, c.MaxWork)
	if err != nil {
		return nil, err
	}
	for i, ch := range out {
		if len(ch.Violations) == 0 {
			continue
		}
		c.violations.WithLabelValues(evs[i].Type).Inc()
		c.warn(ctx, accountID, evs[i], ch)
	}
	return out, nil
}

// WarnLogInterval is the least time between two warn lines of events of
// one type that break its schema (ModeWarn): a publisher of bad events
// would otherwise write a line per event, up to a request's 1,000 at once.
const WarnLogInterval = 10 * time.Second

// warnLine is the message of the warn line of events that break their
// schema (docs/event-types.md).
const warnLine = "an event breaks its schema (accepted: the account's schema_validation is warn)"

// warn writes the warn line of ev, which ch found breaking its schema,
// when one is due for its type (warnLines): it names ev and its first
// violation, and says how many events of the type since the last line
// it did not write (suppressed).
func (c *Checker) warn(ctx context.Context, accountID string, ev event.Event, ch Checked) {
	clk := c.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	n, since, due := c.warned.add(ev.Type, clk.Now())
	if !due {
		return
	}
	v := ch.Violations[0]
	attrs := []slog.Attr{slog.String("account", accountID), slog.String("event_id", ev.ID), slog.String("source", ev.Source),
		slog.String("type", ev.Type), slog.Int("version", ch.Version), slog.String("field", v.Field()),
		slog.String("keyword", v.Keyword), slog.String("error", v.Message), slog.Int("suppressed", n-1)}
	if since > 0 {
		attrs = append(attrs, slog.Duration("since_last_line", since))
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, warnLine, attrs...)
}

// warnLines coalesces the warn lines of events that break their schema,
// by type (logline.Coalesced, each WarnLogInterval). Only catalog types
// are checked, so it holds at most about MaxEventTypes types; past twice
// that (types archived and made anew) it starts afresh, forgetting the
// counts not yet in a line.
type warnLines struct {
	mu    sync.Mutex
	types map[string]*logline.Coalesced
}

// add counts one event of typ that breaks its schema at now: whether its
// line is due, the events it stands for, and the time since the type's
// last line (0: the first).
func (w *warnLines) add(typ string, now time.Time) (n int, since time.Duration, due bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.types[typ]
	if l == nil {
		if w.types == nil || len(w.types) >= 2*MaxEventTypes {
			w.types = map[string]*logline.Coalesced{}
		}
		l = &logline.Coalesced{}
		w.types[typ] = l
	}
	return l.Add(now, WarnLogInterval)
}

// UnknownTypeError refuses a subscription's event type that the catalog
// does not hold, for an account that takes catalog types only (the API
// answers 422 naming Field).
type UnknownTypeError struct {
	Field, Detail string
}

func (e *UnknownTypeError) Error() string { return e.Field + ": " + e.Detail }

// CheckTypes checks ts, the event_types of a subscription of the account
// accountID: when the account takes catalog types only, each must be a
// catalog type (archived ones included) or one Herald reserves for its own
// events; the first that is not is an *UnknownTypeError naming
// event_types[i] and the nearest catalog type.
func (c *Checker) CheckTypes(ctx context.Context, accountID string, ts []string) error {
	_, only, err := c.settings(ctx, accountID)
	if err != nil || !only {
		return err
	}
	for i, t := range ts {
		if event.ReservedTypeName(t) || c.catalog.Has(t) {
			continue
		}
		return &UnknownTypeError{Field: "event_types[" + strconv.Itoa(i) + "]",
			Detail: notInCatalog(t, c.catalog.snap.Load().names) + "; add it to the catalog (POST /v1/event-types) or choose a catalog type"}
	}
	return nil
}
