package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Reads of deliveries, events and attempts (store.DeliveryStore's reads).
//
// The lists of deliveries write their filters once, here
// (deliveryConds): which conditions a filter has, in which order, with
// which arguments. Each condition is a statement of its own in the
// drivers' queries/reads.sql (a "Deliveries…" condition on deliveries d
// joined with events e, its parameters numbered from 1), and a page's
// statement is a base statement (DeliveryPage…, DeadLetterPage…) whose
// /*where*/ marker driver.Where replaces with the conditions, numbering
// their parameters anew. So the rules are the engine's and the SQL each
// dialect's: SQLite's conditions steer its planner to the index the
// filters have (a literal status that proves a partial index's condition,
// a unary + that keeps it off the account's wider index, the events of an
// event id first, INDEXED BY), PostgreSQL's let its planner choose, for
// the arguments (Snapshot). Each driver's plan tests (plan_test.go)
// compose the same statements through its queries map and pin their
// plans.
var (
	// qGetDelivery reads delivery $1 (sqlrow.ScanDelivery).
	qGetDelivery = query("GetDelivery")
	// qGetEvent reads event $1 (sqlrow.ScanEvent).
	qGetEvent = query("GetEvent")
	// qDeliveryExists returns 1 when delivery $1 exists.
	qDeliveryExists = query("DeliveryExists")
	// qAttemptSizes and qAttemptPage: the bytes (sqlrow.AttemptBytes) and
	// the rows (sqlrow.AttemptCols) of delivery $1's attempts numbered
	// after $2, in number order, at most $3.
	qAttemptSizes = query("AttemptSizes")
	qAttemptPage  = query("AttemptPage")

	// The bases of the delivery lists, newest first (by ID), at most $1
	// (after the conditions' parameters): the bytes of each delivery
	// (sqlrow.DeliveryBytes) and the deliveries; DeadLetter…, the bytes
	// (sqlrow.DeadLetterBytes) and the deliveries with their events
	// (sqlrow.ScanListed). …ByEvent, the same when the conditions name an
	// event's id (DeliveriesOfEvent): SQLite reads the events with that id
	// first, then their few deliveries.
	qDeliverySizes          = query("DeliverySizes")
	qDeliveryPage           = query("DeliveryPage")
	qDeliverySizesByEvent   = query("DeliverySizesByEvent")
	qDeliveryPageByEvent    = query("DeliveryPageByEvent")
	qDeadLetterSizes        = query("DeadLetterSizes")
	qDeadLetterPage         = query("DeadLetterPage")
	qDeadLetterSizesByEvent = query("DeadLetterSizesByEvent")
	qDeadLetterPageByEvent  = query("DeadLetterPageByEvent")
	// Open…: the same for a status that is not delivered within a
	// subscription, an account or an endpoint (openList): PostgreSQL keeps
	// those deliveries' status indexes in a table of their own
	// (open_deliveries, whose row d then is, with the columns the
	// conditions read); SQLite's status indexes hold no leased delivery, so
	// its Open… merge them with deliveries_leased (two arms, each with the
	// conditions).
	qOpenDeliverySizes   = query("OpenDeliverySizes")
	qOpenDeliveryPage    = query("OpenDeliveryPage")
	qOpenDeadLetterSizes = query("OpenDeadLetterSizes")
	qOpenDeadLetterPage  = query("OpenDeadLetterPage")

	// The conditions of the delivery lists (deliveryConds), each with its
	// own parameters from $1.
	//
	// qDeliveriesOfAccount: of account $1, the walk of its index
	// (account_id, id) or (account_id, status, id).
	qDeliveriesOfAccount = query("DeliveriesOfAccount")
	// qDeliveriesOfAccountFiltered: of account $1, a filter on the rows
	// another condition's index finds (a subscription's, an endpoint's:
	// each is in one account).
	qDeliveriesOfAccountFiltered = query("DeliveriesOfAccountFiltered")
	// qDeliveriesOfEventInAccount: of account $1, with an event id
	// (qDeliveriesOfEvent): the events of that id in the account.
	qDeliveriesOfEventInAccount = query("DeliveriesOfEventInAccount")
	// qDeliveriesOfSubscription: of subscription $1.
	qDeliveriesOfSubscription = query("DeliveriesOfSubscription")
	// qDeliveriesOfEndpoint: of endpoint $1 (any status).
	qDeliveriesOfEndpoint = query("DeliveriesOfEndpoint")
	// qDeliveriesQueuedOfEndpoint: queued for endpoint $1, a seek of the
	// partial index deliveries_queued_endpoint (endpoint_id, id).
	qDeliveriesQueuedOfEndpoint = query("DeliveriesQueuedOfEndpoint")
	// qDeliveriesOfEvent: of the events of id $1.
	qDeliveriesOfEvent = query("DeliveriesOfEvent")
	// qDeliveriesOfOrderingKey: of ordering key $1, a seek of
	// deliveries_ordering_all (subscription_id, ordering_key, id), whose
	// condition it repeats.
	qDeliveriesOfOrderingKey = query("DeliveriesOfOrderingKey")
	// qDeliveriesFrom and qDeliveriesBefore: with IDs from $1, before $1
	// (a time range's bounds, a page's cursor): a range of the ID, which
	// every index above ends with.
	qDeliveriesFrom   = query("DeliveriesFrom")
	qDeliveriesBefore = query("DeliveriesBefore")
	// qDeliveriesOfNoStatus: none (a status that is not valid).
	qDeliveriesOfNoStatus = query("DeliveriesOfNoStatus")
	// deliveriesOfStatus: of each valid status, written as a literal, never
	// a parameter, so that the planners see the partial indexes that hold
	// it (SQLite's queued ones of 0006 and those of the deliveries not
	// delivered of 0010; PostgreSQL's of open_deliveries, 0021) in every
	// plan, generic ones included.
	deliveriesOfStatus = map[delivery.Status]driver.Query{
		delivery.StatusPending:      query("DeliveriesPending"),
		delivery.StatusDelivered:    query("DeliveriesDelivered"),
		delivery.StatusDeadLettered: query("DeliveriesDeadLettered"),
		delivery.StatusDropped:      query("DeliveriesDropped"),
		delivery.StatusQueued:       query("DeliveriesQueued"),
		delivery.StatusFiltered:     query("DeliveriesFiltered"),
	}
)

func init() {
	for _, st := range delivery.Statuses {
		if _, ok := deliveriesOfStatus[st]; !ok {
			panic("engine: status " + string(st) + " has no condition of the delivery lists")
		}
	}
}

// GetDelivery implements store.DeliveryStore.
func (s *Store) GetDelivery(ctx context.Context, id string) (delivery.Delivery, error) {
	d, err := sqlrow.ScanDelivery(s.drv.Reader().QueryRow(ctx, qGetDelivery, id))
	if errors.Is(err, driver.ErrNoRows) {
		return delivery.Delivery{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return d, err
}

// GetEvent implements store.DeliveryStore.
func (s *Store) GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error) {
	e, err := sqlrow.ScanEvent(s.drv.Reader().QueryRow(ctx, qGetEvent, seq))
	if errors.Is(err, driver.ErrNoRows) {
		return store.StoredEvent{}, fmt.Errorf("event %d: %w", seq, store.ErrNotFound)
	}
	return e, err
}

// ListDeliveries implements store.DeliveryStore: newest first (by ID, which
// sorts by creation time); the cursor is the last ID of the previous page.
// Every combination of filters with a subscription or an account is served
// by an index (deliveryConds); a status alone, across every account, reads
// the deliveries newest first until its page is full (the API always
// lists within an account, so that list, of tools and tests, has no index
// of its own).
func (s *Store) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]delivery.Delivery, string, error) {
	ds, next, err := s.listDeliveries(ctx, f, false)
	if err != nil {
		return nil, "", err
	}
	out := make([]delivery.Delivery, len(ds))
	for i, d := range ds {
		out[i] = d.Delivery
	}
	return out, next, nil
}

// ListQueued implements store.DeliveryStore with ListDeliveries' indexes
// (deliveryConds), each delivery with its event.
func (s *Store) ListQueued(ctx context.Context, f store.DeliveryFilter) ([]store.DeadLetter, string, error) {
	f.Status = delivery.StatusQueued
	return s.listDeliveries(ctx, f, true)
}

// ListDeadLetters implements store.DeliveryStore: newest first, each with
// its event; the cursor is the last ID of the previous page. A
// subscription's dead letters are a seek of its status index
// (subscription_id, status, id), an account's of (account_id, status, id);
// every account's read the deliveries newest first until the page is
// full.
func (s *Store) ListDeadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.DeadLetter, string, error) {
	return s.listDeliveries(ctx, store.DeliveryFilter{AccountID: f.AccountID, SubscriptionID: f.SubscriptionID,
		Status: delivery.StatusDeadLettered, Page: f.Page}, true)
}

// listDeliveries reads a page of the deliveries f selects, newest first,
// with their events when withEvent (else each Event is empty).
func (s *Store) listDeliveries(ctx context.Context, f store.DeliveryFilter, withEvent bool) ([]store.DeadLetter, string, error) {
	if err := store.DeliveryCursor.Check(f.Page.Cursor); err != nil {
		return nil, "", err
	}
	sizes, rows, args := DeliveryPage(f, withEvent)
	return readPage(ctx, s, f.Page, sizes, rows, args,
		sqlrow.ScanListed(sqlrow.ScanDelivery, withEvent), func(d store.DeadLetter) string { return d.ID })
}

// DeliveryPage returns the statements of a page of the deliveries f
// selects after f.Page.Cursor (already checked), newest first: the sizes
// and the rows, with their events when withEvent, and their arguments
// (without the limit, which follows them). The drivers' plan tests read
// them.
func DeliveryPage(f store.DeliveryFilter, withEvent bool) (sizes, rows driver.Query, args []any) {
	conds, args := deliveryConds(f)
	if f.Page.Cursor != "" {
		conds, args = append(conds, qDeliveriesBefore), append(args, f.Page.Cursor)
	}
	byEvent := f.EventID != ""
	switch {
	case withEvent && byEvent:
		sizes, rows = qDeadLetterSizesByEvent, qDeadLetterPageByEvent
	case withEvent && openList(f):
		sizes, rows = qOpenDeadLetterSizes, qOpenDeadLetterPage
	case withEvent:
		sizes, rows = qDeadLetterSizes, qDeadLetterPage
	case byEvent:
		sizes, rows = qDeliverySizesByEvent, qDeliveryPageByEvent
	case openList(f):
		sizes, rows = qOpenDeliverySizes, qOpenDeliveryPage
	default:
		sizes, rows = qDeliverySizes, qDeliveryPage
	}
	return driver.Where(sizes, conds...), driver.Where(rows, conds...), args
}

// openList reports whether f lists deliveries of one status that is not
// delivered within a subscription, an account or an endpoint, without an
// event id or an ordering key (whose indexes, on deliveries, hold every
// delivery of theirs): the lists that the Open… bases serve.
func openList(f store.DeliveryFilter) bool {
	_, valid := deliveriesOfStatus[f.Status]
	return valid && f.Status != delivery.StatusDelivered && f.EventID == "" && f.OrderingKey == "" &&
		(f.SubscriptionID != "" || f.AccountID != "" || f.EndpointID != "")
}

// deliveryConds are the conditions (deliveries d joined with events e)
// and arguments of f, which one index serves: (subscription_id, id) or
// (subscription_id, status, id) for a subscription (its deliveries are
// all in its account: the account is then a filter on them); (account_id,
// id) or (account_id, status, id) for an account; (status, id) for a
// status in every account; for an event's id, the events with that id
// (in the account, when given) then their deliveries by (event_seq); for
// a subscription's ordering key, the partial index deliveries_ordering_all
// (subscription_id, ordering_key, id); for an endpoint's queued
// deliveries, the partial index deliveries_queued_endpoint (endpoint_id,
// id) (the account a filter then too: an endpoint is in one account). An
// endpoint with another status, which the API never asks for, is a filter
// on what the other conditions select. A delivered status is in no
// partial index: its lists walk the subscription's or account's index,
// filtered. The time range (store.DeliveryFilter's IDRange) is a range of
// the ID, which each of these indexes ends with, so it narrows the seek.
func deliveryConds(f store.DeliveryFilter) (conds []driver.Query, args []any) {
	add := func(q driver.Query, arg ...any) {
		conds, args = append(conds, q), append(args, arg...)
	}
	queuedAt := f.EndpointID != "" && f.Status == delivery.StatusQueued
	if f.SubscriptionID != "" {
		add(qDeliveriesOfSubscription, f.SubscriptionID)
	}
	switch {
	case queuedAt:
		add(qDeliveriesQueuedOfEndpoint, f.EndpointID)
	case f.EndpointID != "":
		add(qDeliveriesOfEndpoint, f.EndpointID)
	}
	if f.Status != "" && !queuedAt {
		if q, ok := deliveriesOfStatus[f.Status]; ok {
			add(q)
		} else {
			add(qDeliveriesOfNoStatus)
		}
	}
	if f.EventID != "" {
		add(qDeliveriesOfEvent, f.EventID)
	}
	if f.OrderingKey != "" {
		add(qDeliveriesOfOrderingKey, f.OrderingKey)
	}
	lo, hi := f.IDRange()
	if lo != "" {
		add(qDeliveriesFrom, lo)
	}
	if hi != "" {
		add(qDeliveriesBefore, hi)
	}
	if f.AccountID != "" {
		switch {
		case f.EventID != "":
			add(qDeliveriesOfEventInAccount, f.AccountID)
		case f.SubscriptionID != "" || queuedAt:
			add(qDeliveriesOfAccountFiltered, f.AccountID)
		default:
			add(qDeliveriesOfAccount, f.AccountID)
		}
	}
	return conds, args
}

// ListAttempts implements store.DeliveryStore: oldest first; the cursor is
// the last attempt number of the previous page (store.NumberCursor).
// ErrNotFound when the delivery does not exist.
func (s *Store) ListAttempts(ctx context.Context, deliveryID string, p store.Page) ([]delivery.Attempt, string, error) {
	after, err := store.NumberCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	out, next, err := readPage(ctx, s, p, qAttemptSizes, qAttemptPage, []any{deliveryID, after},
		sqlrow.ScanAttempt, func(a delivery.Attempt) string { return strconv.Itoa(a.Number) })
	if err != nil || len(out) > 0 {
		return out, next, err
	}
	var one int
	switch err := s.drv.Reader().QueryRow(ctx, qDeliveryExists, deliveryID).Scan(&one); {
	case errors.Is(err, driver.ErrNoRows):
		return nil, "", fmt.Errorf("delivery %s: %w", deliveryID, store.ErrNotFound)
	case err != nil:
		return nil, "", err
	}
	return out, next, nil
}
