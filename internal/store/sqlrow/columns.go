// Package sqlrow is how both SQL stores (store/sqlite and store/postgres)
// keep values in columns and rows: times as Unix milliseconds, leases,
// the sizes of list items, and the subscription and endpoint row codecs.
package sqlrow

import (
	"math"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// UnixMS stores t as Unix milliseconds; the zero time is 0. Precision below
// a millisecond is dropped, and the instant 1970-01-01T00:00:00Z itself
// reads back as the zero time.
func UnixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromUnixMS is the inverse of UnixMS; times come back in UTC.
func FromUnixMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// LeaseUntilMS is the lease_until column value for l. A lease must be
// non-zero to count as held, so a zero (or pre-1970) Until is stored as
// "held until released": such a lease never expires.
func LeaseUntilMS(l store.Lease) int64 {
	v := UnixMS(l.Until)
	if v <= 0 {
		return math.MaxInt64
	}
	return v
}

// AttemptDueMS is when what follows attempt a (a dead letter's delivery,
// the deliveries a deactivation queues) is due, in Unix milliseconds: its
// start (the dispatcher's clock; its duration is measured
// on the wall clock, so adding it would mix two clocks and, on a test's
// fake clock, put what follows in a future that never comes); 0 when its
// start is unknown (an outcome that made no attempt on a delivery never
// attempted before).
func AttemptDueMS(a *delivery.Attempt) int64 {
	if a.StartedAt.IsZero() {
		return 0
	}
	return UnixMS(a.StartedAt)
}

// AttemptCols selects a delivery.Attempt from attempts; ScanAttempt
// reads them in this order.
const AttemptCols = `delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body`

// ScanAttempt reads AttemptCols.
func ScanAttempt(sc RowScanner) (delivery.Attempt, error) {
	var a delivery.Attempt
	var started, us int64
	err := sc.Scan(&a.DeliveryID, &a.Number, &started, &us, &a.StatusCode, &a.Outcome, &a.Error, &a.ResponseBody)
	a.StartedAt = FromUnixMS(started)
	a.Duration = time.Duration(us) * time.Microsecond
	return a, err
}

// ScanListed returns the scan of a listed delivery: a store's delivery
// columns, read by scanDelivery (which reads extra destinations after
// them), then, withEvent, its event's: e.seq, e.account_id, e.id, e.source,
// e.type, e.subject, e.payload, e.published_at.
func ScanListed(scanDelivery func(sc RowScanner, extra ...any) (delivery.Delivery, error), withEvent bool) func(RowScanner) (store.DeadLetter, error) {
	return func(sc RowScanner) (store.DeadLetter, error) {
		var r store.DeadLetter
		var extra []any
		var published int64
		if withEvent {
			e := &r.Event
			extra = []any{&e.Seq, &e.AccountID, &e.ID, &e.Source, &e.Type, &e.Subject, &e.Payload, &published, &e.SchemaErrors}
		}
		d, err := scanDelivery(sc, extra...)
		r.Delivery = d
		r.Event.PublishedAt = FromUnixMS(published)
		return r, err
	}
}

// Item sizes: SQL expressions, the same in both stores, for the bytes of a
// list item's variable-length fields (store.MaxPageBytes). They use only
// octet_length, which reads a value's length without its content.
const (
	// DeliveryBytes: a delivery's event id and source (deliveries d joined
	// with events e); its other fields are short.
	DeliveryBytes = `octet_length(e.id) + octet_length(e.source)`
	// DeadLetterBytes: a dead letter's event: id, source, type, subject,
	// payload and schema errors (NULL for most).
	DeadLetterBytes = DeliveryBytes + ` + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)` +
		` + coalesce(octet_length(e.schema_errors), 0)`
	// AttemptBytes: an attempt's error and response body.
	AttemptBytes = `octet_length(error) + coalesce(octet_length(response_body), 0)`
	// SubscriptionBytes: a subscription's name, URL, event types, subject
	// filters, retry policy, headers and secret headers.
	SubscriptionBytes = `octet_length(name) + octet_length(url) + octet_length(event_types) +
	octet_length(subject_begins_with) + octet_length(subject_ends_with) +
	coalesce(octet_length(retry_policy), 0) + octet_length(headers) + octet_length(secret_headers)`
	// AccountBytes: an account's name and settings.
	AccountBytes = `octet_length(name) + octet_length(settings)`
	// KeyBytes: a key's name.
	KeyBytes = `octet_length(name)`
	// EndpointBytes: an endpoint's URL and health window.
	EndpointBytes = `octet_length(url) + octet_length(health_window)`
)

// IDSet collects distinct IDs in the order first added (the subscriptions
// a write made deliveries receivable for, for the stores' OnQueued).
type IDSet struct {
	IDs  []string
	seen map[string]bool
}

// Add adds id unless it is in the set.
func (s *IDSet) Add(id string) {
	if s.seen[id] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
	s.IDs = append(s.IDs, id)
}

// Reset empties the set (a write function may run twice).
func (s *IDSet) Reset() {
	s.IDs = s.IDs[:0]
	clear(s.seen)
}

// OrderingKey is the ordering_key column value of a delivery's ordering
// key: NULL for "" (an unordered delivery), so the ordering indexes, which
// hold only keyed deliveries, stay as small as the ordered traffic.
func OrderingKey(key string) any { return NullIfEmpty(key) }

// NullIfEmpty is a nullable text column's value: NULL for "" (an event's
// trace_context when tracing is off), else s.
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
