package engine

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Publish writes events and their deliveries (store.DeliveryStore).
var (
	// qGuardCatalog reads the catalog version for a batch's guards, in
	// share mode on a shared store: no subscription write commits until
	// the batch does, so the check holds at commit, and a delete that
	// follows sees every delivery the batch wrote.
	qGuardCatalog = query("GuardCatalog")
	// qPresentSubscriptions returns those of the subscriptions $1 (a
	// list) that exist.
	qPresentSubscriptions = query("PresentSubscriptions")
	// qInsertEvents (rows: account, id, source, type, subject,
	// published_at, payload, trace_context, '' for none, schema_errors,
	// '' for none; the last column may be a nil []string, NULL in every
	// row: see eventRows.errs) inserts events
	// whose key (id, source, account) is not stored, drawing their seqs in
	// the order given, and returns the seq, account, id and source of each
	// it inserted. PostgreSQL inserts them in key order, so that two
	// nodes publishing overlapping events never deadlock.
	qInsertEvents = query("InsertEvents")
	// qEventSeqs (rows: account, id, source) returns the seq, account, id
	// and source of each of those events that is stored.
	qEventSeqs = query("EventSeqs")
	// qInsertDeliveries (rows: id, account, subscription, endpoint,
	// event_seq, status, at, lease_owner, lease_until, ordering_key, ''
	// for none) inserts deliveries created at `at`, their round start and
	// next attempt then too.
	qInsertDeliveries = query("InsertDeliveries")
)

// publishReq is one Publish call: its results are set anew on every run.
type publishReq struct {
	events  []store.NewEvent
	opts    store.PublishOptions
	results []store.PublishResult
	// refused is the guard's verdict (a *store.StaleCatalogError), set
	// anew on every run: the request writes nothing and is answered with
	// it while the rest of its batch commits.
	refused error
}

// Publish implements store.DeliveryStore. The call is one request of the
// writer's group commit (writer.go): its events and deliveries are
// committed together or not at all (a delivery ID that already exists
// fails the call). Each event is inserted in its account
// (account.OrDefault) unless its key (id, source, account) is stored: an
// event stored before, or by another node at the same time, is a
// duplicate, reported with the stored event's seq, and none of its
// deliveries is written. This holds within one call and within one batch
// too: the second occurrence of an event is the duplicate. Seqs increase
// in input order within a call.
//
// Deliveries are written in their event's account, pending, due at
// PublishedAt (also their round start and creation time), leased to
// opts.Lease when Claimed; those with Queued set are written queued and
// unlocked, receivable at PublishedAt (a delivery both Claimed and Queued
// fails the call before anything is written); their subscriptions are
// announced after the commit (notifyQueued, queuedHere). The guard of
// opts is checked in the batch's transaction (guard). A publish of more
// than GroupCommit.LargeRows rows is a large one (writer.go, staged.go).
func (s *Store) Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error) {
	if len(events) == 0 {
		if err := s.w.checkOpen(); err != nil {
			return nil, err
		}
		return []store.PublishResult{}, nil
	}
	rows := len(events)
	for i := range events {
		rows += len(events[i].Deliveries)
		for _, d := range events[i].Deliveries {
			if d.Claimed && d.Queued {
				return nil, fmt.Errorf("publish: delivery %q is both claimed and queued", d.ID)
			}
		}
	}
	p := &publishReq{events: events, opts: opts}
	r := &request{pub: p, account: account.OrDefault(events[0].AccountID), rows: rows}
	if err := s.w.write(ctx, r); err != nil {
		return nil, err
	}
	s.queuedHere(r.queued.IDs)
	return p.results, nil
}

// guard reads the catalog version for a batch, when it publishes or may
// deactivate or copy a dead letter, and applies each Publish's guard
// (store.PublishOptions), setting its refused. A batch that may deactivate
// a subscription (Outcome.Deactivate) takes the catalog lock (qLockCatalog)
// before it changes any row, as every subscription write does, so its
// deactivations find the subscriptions' states unchanged until it
// commits; one that publishes or writes the delivery of a dead letter
// reads it in share mode (qGuardCatalog), so the dead-letter URLs it reads
// stay until it commits, and a subscription write that follows sees the
// deliveries it wrote.
func (s *Store) guard(ctx context.Context, x driver.Executor, pubs, recs []*request) error {
	deactivating, copying := false, false
	for _, r := range recs {
		for i := range r.rec.outcomes {
			deactivating = deactivating || deactivates(&r.rec.outcomes[i])
			copying = copying || copiesDeadLetter(&r.rec.outcomes[i])
		}
	}
	for _, r := range pubs {
		r.pub.refused = nil
	}
	if len(pubs) == 0 && !deactivating && !copying {
		return nil
	}
	q := qGuardCatalog
	if deactivating {
		q = qLockCatalog
	}
	var v int64
	if err := x.QueryRow(ctx, q).Scan(&v); err != nil {
		return fmt.Errorf("read the catalog version: %w", err)
	}
	return s.checkGuards(ctx, x, pubs, v)
}

// checkGuards sets the refusal of each Publish of pubs whose guard fails
// at catalog version v.
func (s *Store) checkGuards(ctx context.Context, x driver.Executor, pubs []*request, v int64) error {
	var need sqlrow.IDSet // subscriptions that must exist
	for _, r := range pubs {
		p := r.pub
		if p.opts.CatalogVersion > 0 {
			if v > p.opts.CatalogVersion {
				p.refused = &store.StaleCatalogError{Version: v}
			}
			continue
		}
		if p.opts.RequireSubscriptions {
			for i := range p.events {
				for _, d := range p.events[i].Deliveries {
					need.Add(d.SubscriptionID)
				}
			}
		}
	}
	if len(need.IDs) == 0 {
		return nil
	}
	present, err := idsOf(ctx, x, qPresentSubscriptions, need.IDs)
	if err != nil {
		return fmt.Errorf("check subscriptions: %w", err)
	}
	for _, r := range pubs {
		if r.pub.opts.CatalogVersion == 0 && r.pub.opts.RequireSubscriptions && !allPresent(r.pub.events, present) {
			r.pub.refused = &store.StaleCatalogError{Version: v}
		}
	}
	return nil
}

// allPresent reports whether every delivery of events names a
// subscription in present.
func allPresent(events []store.NewEvent, present map[string]bool) bool {
	for i := range events {
		for _, d := range events[i].Deliveries {
			if !present[d.SubscriptionID] {
				return false
			}
		}
	}
	return true
}

// publish writes the events of pubs (their guards passed) with their
// deliveries, and sets their results. Within the batch the first
// occurrence of an event is the one stored; later occurrences, in the same
// call or another, are duplicates of it. The subscriptions of the queued
// deliveries it wrote go into their requests' queued.
func (s *Store) publish(ctx context.Context, x driver.Executor, pubs []*request) error {
	if len(pubs) == 0 {
		return nil
	}
	ev := newEventRows()
	for _, r := range pubs {
		for i := range r.pub.events {
			ev.add(&r.pub.events[i])
		}
	}
	if err := ev.insert(ctx, x); err != nil {
		return err
	}
	setResults(pubs, ev)
	var ds deliveryRows
	var none sqlrow.IDSet // setResults noted the queued ones
	for _, r := range pubs {
		for i, res := range r.pub.results {
			if !res.Duplicate {
				ds.add(&r.pub.events[i], res.Seq, r.pub.opts.Lease, &none)
			}
		}
	}
	if len(ds.id) == 0 {
		return nil
	}
	if _, err := x.Exec(ctx, qInsertDeliveries, ds.args()...); err != nil {
		return fmt.Errorf("insert deliveries %q…: %w", ds.id[0], err)
	}
	return nil
}

// eventKey identifies an event in its account.
type eventKey struct{ account, id, source string }

func eventKeyOf(ev *store.NewEvent) eventKey {
	return eventKey{account.OrDefault(ev.AccountID), ev.ID, ev.Source}
}

// eventRows are a batch's distinct events, each at a slot, as the columns
// of qInsertEvents, and once written each slot's seq and whether this
// batch inserted it.
type eventRows struct {
	slots                          map[eventKey]int
	keys                           []eventKey
	acc, id, src, typ, subj, trace []string
	at                             []int64
	payload                        [][]byte
	// errs are the events' schema errors ('' for none), nil while none
	// has any: then the column is NULL in every row, and a batch of
	// events without errors costs nothing more (driver: a nil []string
	// column).
	errs []string

	seqs     []int64
	inserted []bool
	found    int
}

func newEventRows() *eventRows { return &eventRows{slots: map[eventKey]int{}} }

// add gives ev a slot unless an event with its key has one.
func (e *eventRows) add(ev *store.NewEvent) {
	k := eventKeyOf(ev)
	if _, ok := e.slots[k]; ok {
		return
	}
	e.slots[k] = len(e.keys)
	e.keys = append(e.keys, k)
	payload := ev.Payload
	if payload == nil {
		payload = []byte{}
	}
	e.acc, e.id, e.src = append(e.acc, k.account), append(e.id, ev.ID), append(e.src, ev.Source)
	e.typ, e.subj, e.trace = append(e.typ, ev.Type), append(e.subj, ev.Subject), append(e.trace, ev.TraceContext)
	e.at, e.payload = append(e.at, sqlrow.UnixMS(ev.PublishedAt)), append(e.payload, payload)
	if len(ev.SchemaErrors) > 0 && e.errs == nil {
		e.errs = make([]string, len(e.keys)-1, cap(e.keys))
	}
	if e.errs != nil {
		e.errs = append(e.errs, string(ev.SchemaErrors))
	}
}

// insert inserts the events (qInsertEvents), then looks up the seqs of
// those not inserted (lookUp).
func (e *eventRows) insert(ctx context.Context, x driver.Executor) error {
	e.seqs, e.inserted = make([]int64, len(e.keys)), make([]bool, len(e.keys))
	if err := x.Query(ctx, qInsertEvents, e.scan(true), e.args()...); err != nil {
		return fmt.Errorf("insert events %q from %q…: %w", e.id[0], e.src[0], err)
	}
	return e.lookUp(ctx, x)
}

// args are qInsertEvents' columns.
func (e *eventRows) args() []any {
	return []any{e.acc, e.id, e.src, e.typ, e.subj, e.at, e.payload, e.trace, e.errs}
}

// lookUp looks up the seqs of the events not inserted (qEventSeqs):
// stored before, or by another node's transaction that committed while
// the insert waited for it. errConcurrent when such an event was deleted
// in between (Cleanup).
func (e *eventRows) lookUp(ctx context.Context, x driver.Executor) error {
	if e.found == len(e.keys) {
		return nil
	}
	var mAcc, mID, mSrc []string
	for i, k := range e.keys {
		if e.seqs[i] == 0 {
			mAcc, mID, mSrc = append(mAcc, k.account), append(mID, k.id), append(mSrc, k.source)
		}
	}
	if err := x.Query(ctx, qEventSeqs, e.scan(false), mAcc, mID, mSrc); err != nil {
		return fmt.Errorf("look up duplicate events: %w", err)
	}
	if e.found < len(e.keys) {
		return errConcurrent
	}
	return nil
}

// scan reads (seq, account, id, source) rows into the seqs of the slots
// still without one; ins says whether they are of events inserted here.
func (e *eventRows) scan(ins bool) func(driver.Row) error {
	return func(r driver.Row) error {
		var seq int64
		var k eventKey
		if err := r.Scan(&seq, &k.account, &k.id, &k.source); err != nil {
			return err
		}
		if slot, ok := e.slots[k]; ok && e.seqs[slot] == 0 {
			e.seqs[slot], e.inserted[slot] = seq, ins
			e.found++
		}
		return nil
	}
}

// deliveryRows are the columns of qInsertDeliveries.
type deliveryRows struct {
	id, acc, sub, ep, status, owner, key []string
	seq, at, until                       []int64
}

// add adds the deliveries of ev, stored at seq: claimed ones leased to
// lease, queued ones' subscriptions noted in queued.
func (d *deliveryRows) add(ev *store.NewEvent, seq int64, lease store.Lease, queued *sqlrow.IDSet) {
	at, acc := sqlrow.UnixMS(ev.PublishedAt), account.OrDefault(ev.AccountID)
	for k := range ev.Deliveries {
		nd := &ev.Deliveries[k]
		status, owner, until := deliveryState(nd, lease, queued)
		d.add1(nd, acc, seq, string(status), at, owner, until)
	}
}

// add1 adds one delivery's row.
func (d *deliveryRows) add1(nd *store.NewDelivery, acc string, seq int64, status string, at int64, owner string, until int64) {
	d.id, d.acc, d.sub, d.ep = append(d.id, nd.ID), append(d.acc, acc), append(d.sub, nd.SubscriptionID), append(d.ep, nd.EndpointID)
	d.seq, d.status, d.at = append(d.seq, seq), append(d.status, status), append(d.at, at)
	d.owner, d.until, d.key = append(d.owner, owner), append(d.until, until), append(d.key, nd.OrderingKey)
}

// args are qInsertDeliveries' columns.
func (d *deliveryRows) args() []any {
	return []any{d.id, d.acc, d.sub, d.ep, d.seq, d.status, d.at, d.owner, d.until, d.key}
}

// deliveryState is how a delivery is written (see Publish): its status,
// and the lease owner and end of a claimed one. A queued one's
// subscription goes into queued.
func deliveryState(d *store.NewDelivery, lease store.Lease, queued *sqlrow.IDSet) (status delivery.Status, owner string, until int64) {
	switch {
	case d.Claimed:
		return delivery.StatusPending, lease.Owner, sqlrow.LeaseUntilMS(lease)
	case d.Queued:
		queued.Add(d.SubscriptionID)
		return delivery.StatusQueued, "", 0
	}
	return delivery.StatusPending, "", 0
}

// setResults sets the results of pubs from the events written (ev) and
// notes the subscriptions of the queued deliveries written in each
// request's queued.
func setResults(pubs []*request, ev *eventRows) {
	written := make([]bool, len(ev.keys))
	for _, r := range pubs {
		r.queued.Reset()
		p := r.pub
		p.results = make([]store.PublishResult, len(p.events))
		for i := range p.events {
			slot := ev.slots[eventKeyOf(&p.events[i])]
			dup := !ev.inserted[slot] || written[slot]
			p.results[i] = store.PublishResult{Seq: ev.seqs[slot], Duplicate: dup}
			if dup {
				continue
			}
			written[slot] = true
			for _, d := range p.events[i].Deliveries {
				if d.Queued && !d.Claimed {
					r.queued.Add(d.SubscriptionID)
				}
			}
		}
	}
}
