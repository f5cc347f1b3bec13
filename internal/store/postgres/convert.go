package postgres

import (
	"strings"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/store/sqlrow"
)

// cleanText makes s storable in a PostgreSQL text column, which holds only
// valid UTF-8 without NUL bytes: invalid sequences become U+FFFD and NUL
// bytes are removed. It is applied to the free-form diagnostics of an
// attempt (its error and outcome strings), never to identifiers.
func cleanText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// scanner is a row of either database.
type scanner = sqlrow.RowScanner

// deliveryCols selects a delivery.Delivery from deliveries d joined with events
// e; scanDelivery reads them in this order.
const deliveryCols = `d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')`

// scanDelivery reads deliveryCols followed by extra destinations.
var scanDelivery = sqlrow.ScanDelivery

// eventCols selects a store.StoredEvent from events e.
const eventCols = `e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at`

var scanEvent = sqlrow.ScanEvent
