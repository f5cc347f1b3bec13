package eventtype

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/event"
)

// Settings returns an account's schema validation mode and whether it
// publishes catalog types only (account.Settings, read through a cache).
type Settings func(ctx context.Context, accountID string) (mode string, catalogOnly bool, err error)

// Checker checks the events of a publish against the catalog per their
// account's settings (Catalog.Check): the publish path's check
// (admission.Publisher.Schemas), in every publish format. It counts the
// violations it lets through (ModeWarn) in herald_schema_violations_total
// by type (a catalog type: at most MaxEventTypes label values) and logs
// each such event once, at warn. It is safe for concurrent use.
type Checker struct {
	// MaxWork bounds the schema tests one publish request's checks may
	// cost (Catalog.Check's maxWork; 0: no limit): the server's
	// --max-schema-work. Set it before the first Check.
	MaxWork    int
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
		v := ch.Violations[0]
		c.log.Warn("an event breaks its schema (accepted: the account's schema_validation is warn)",
			"account", accountID, "event_id", evs[i].ID, "source", evs[i].Source, "type", evs[i].Type,
			"version", ch.Version, "field", v.Field(), "keyword", v.Keyword, "error", v.Message)
	}
	return out, nil
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
