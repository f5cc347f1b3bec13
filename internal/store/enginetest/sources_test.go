package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
)

// RunSourcesContract checks the broker sources (store.SourceStore, read
// and written by the API and internal/sourcing): sources as written, their
// pages, names, revisions, reports, dead letters and delete.
func RunSourcesContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Sources", []test{
			{"CreateGetListAll", testSourceCreateGet},
			{"UpdateRevisionsNames", testSourceUpdate},
			{"Report", testSourceReport},
			{"DeadLettersDelete", testSourceDeadLetters},
			{"Leader", testSourceLeader},
		}},
	})
}

// newSource is a NATS source named name at b.now, its id made at b's
// next id time.
func newSource(b *bundle, name string) source.Source {
	b.idAt = b.idAt.Add(time.Millisecond)
	return source.Source{ID: ids.New(source.IDs.Prefix, b.idAt), AccountID: account.DefaultID, Name: name, Type: source.TypeNATS,
		Config: source.Config{Conn: broker.Settings{URL: "nats://user:pw@127.0.0.1:4222"}, Subject: "orders.>", Format: source.FormatRaw,
			Wrap: &source.Wrap{Type: "order.placed", Source: "/orders <&>"}},
		CreatedAt: b.now, UpdatedAt: b.now, Revision: 1, Status: source.Status{Lag: -1}}
}

func createSource(b *bundle, s source.Source) {
	b.t.Helper()
	if err := b.s.CreateSource(b.ctx, s); err != nil {
		b.t.Fatalf("CreateSource(%s): %v", s.Name, err)
	}
}

// testSourceCreateGet: a source reads back as written; an unknown id is
// ErrNotFound; a name is unique in its account (not across accounts, and
// "" never taken); the list pages in id order; AllSources holds them all.
func testSourceCreateGet(t *testing.T, b *bundle) {
	a := newSource(b, "orders")
	a.Config.Conn.Brokers = nil
	createSource(b, a)
	got, err := b.s.GetSource(b.ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "GetSource", got, a)
	if _, err := b.s.GetSource(b.ctx, "src_00000000000000000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSource of an unknown id: %v; want ErrNotFound", err)
	}
	if err := b.s.CreateSource(b.ctx, newSource(b, "orders")); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a second source named orders: %v; want ErrNameTaken", err)
	}
	other := newSource(b, "orders")
	other.AccountID = b.account("other").ID
	createSource(b, other)
	gone := newSource(b, "gone")
	gone.AccountID = "acc_00000000000000000000000001"
	if err := b.s.CreateSource(b.ctx, gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a source of an account that does not exist: %v; want ErrNotFound", err)
	}
	n1, n2 := newSource(b, ""), newSource(b, "")
	n2.Type, n2.Config = source.TypeKafka, source.Config{Conn: broker.Settings{Brokers: []string{"k1:9092", "k2:9092"},
		SASL: &broker.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}}, Topic: "t", Format: source.FormatCloudEvents}
	createSource(b, n1)
	createSource(b, n2)
	all, err := b.s.AllSources(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "AllSources", all, []source.Source{a, other, n1, n2})
	p1, next, err := b.s.ListSources(b.ctx, store.Page{Limit: 3})
	if err != nil || len(p1) != 3 || next != n1.ID {
		t.Fatalf("the first page of 3: %d sources, next %q, %v; want 3 and %s", len(p1), next, err, n1.ID)
	}
	p2, next, err := b.s.ListSources(b.ctx, store.Page{Limit: 3, Cursor: next})
	if err != nil || next != "" {
		t.Fatalf("the second page: next %q, %v", next, err)
	}
	equal(t, "the second page", p2, []source.Source{n2})
	if _, _, err := b.s.ListSources(b.ctx, store.Page{Cursor: "sub_x"}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Fatalf("a cursor of another kind: %v; want ErrInvalidCursor", err)
	}
}

// testSourceUpdate: an update writes name, config and pause at the next
// revision and leaves the status; a stale revision is ErrConflict, an
// unknown id ErrNotFound, a name of another source of the account
// ErrNameTaken; none of them writes.
func testSourceUpdate(t *testing.T, b *bundle) {
	a, c := newSource(b, "a"), newSource(b, "c")
	createSource(b, a)
	createSource(b, c)
	if err := b.s.ReportSource(b.ctx, a.ID, source.Report{Received: 3, Published: 2, Duplicates: 1, Lag: 7, Read: true}); err != nil {
		t.Fatal(err)
	}
	a.Name, a.Paused, a.Config.Subject, a.UpdatedAt, a.Revision = "b", true, "other", b.at(time.Minute), 2
	if err := b.s.UpdateSource(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Status = source.Status{Received: 3, Published: 2, Duplicates: 1, Lag: 7}
	got, _ := b.s.GetSource(b.ctx, a.ID)
	equal(t, "the source after an update", got, a)
	stale := a
	stale.Name = "stale"
	if err := b.s.UpdateSource(b.ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an update at a stale revision: %v; want ErrConflict", err)
	}
	taken := a
	taken.Name, taken.Revision = "c", 3
	if err := b.s.UpdateSource(b.ctx, taken); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("an update to another source's name: %v; want ErrNameTaken", err)
	}
	gone := newSource(b, "gone")
	gone.Revision = 2
	if err := b.s.UpdateSource(b.ctx, gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an update of an unknown source: %v; want ErrNotFound", err)
	}
	got, _ = b.s.GetSource(b.ctx, a.ID)
	equal(t, "the source after refused updates", got, a)
}

// testSourceReport: reports add counts, set the lag, and keep the last
// error until a report that read messages clears failing (the error
// stays shown).
func testSourceReport(t *testing.T, b *bundle) {
	a := newSource(b, "a")
	createSource(b, a)
	report := func(r source.Report, want source.Status) {
		t.Helper()
		if err := b.s.ReportSource(b.ctx, a.ID, r); err != nil {
			t.Fatal(err)
		}
		got, _ := b.s.GetSource(b.ctx, a.ID)
		equal(t, "the status", got.Status, want)
	}
	report(source.Report{Received: 5, Published: 4, Duplicates: 1, Lag: 10, Read: true},
		source.Status{Received: 5, Published: 4, Duplicates: 1, Lag: 10})
	errAt := b.at(time.Second)
	report(source.Report{Lag: -1, Err: "dial tcp: connection refused", ErrAt: errAt},
		source.Status{Received: 5, Published: 4, Duplicates: 1, Lag: -1, LastError: "dial tcp: connection refused", LastErrorAt: errAt, Failing: true})
	report(source.Report{Lag: -1},
		source.Status{Received: 5, Published: 4, Duplicates: 1, Lag: -1, LastError: "dial tcp: connection refused", LastErrorAt: errAt, Failing: true})
	report(source.Report{Received: 1, Published: 1, Lag: 0, Read: true},
		source.Status{Received: 6, Published: 5, Duplicates: 1, Lag: 0, LastError: "dial tcp: connection refused", LastErrorAt: errAt})
	if err := b.s.ReportSource(b.ctx, "src_00000000000000000000000000", source.Report{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a report of an unknown source: %v; want ErrNotFound", err)
	}
}

// testSourceDeadLetters: dead letters read back as stored (binary bodies
// too), page in arrival order, count in the status, are refused for a
// source deleted, and go with their source; DeleteSource of an unknown
// id is ErrNotFound.
func testSourceDeadLetters(t *testing.T, b *bundle) {
	a, other := newSource(b, "a"), newSource(b, "other")
	createSource(b, a)
	createSource(b, other)
	var dls []source.DeadLetter
	for i, body := range [][]byte{{0xff, 0x00, 'x'}, []byte(`{"not":"an event"}`), {}} {
		dl := source.NewDeadLetter(a.ID, "seq-"+string(rune('1'+i)), "not a CloudEvent", body, b.at(time.Duration(i)*time.Millisecond))
		dl.ID = ids.New(source.DeadLetterIDs.Prefix, b.at(time.Duration(i)*time.Millisecond))
		if err := b.s.AddSourceDeadLetter(b.ctx, dl); err != nil {
			t.Fatal(err)
		}
		dls = append(dls, dl)
	}
	if err := b.s.AddSourceDeadLetter(b.ctx, source.NewDeadLetter(other.ID, "m", "r", nil, b.now)); err != nil {
		t.Fatal(err)
	}
	p1, next, err := b.s.ListSourceDeadLetters(b.ctx, a.ID, store.Page{Limit: 2})
	if err != nil || next != dls[1].ID {
		t.Fatalf("the first page: next %q, %v", next, err)
	}
	equal(t, "the first page", p1, dls[:2])
	p2, next, err := b.s.ListSourceDeadLetters(b.ctx, a.ID, store.Page{Limit: 2, Cursor: next})
	if err != nil || next != "" {
		t.Fatalf("the second page: next %q, %v", next, err)
	}
	equal(t, "the second page", p2, dls[2:])
	if got, _ := b.s.GetSource(b.ctx, a.ID); got.Status.DeadLettered != 3 {
		t.Fatalf("dead_lettered = %d; want 3", got.Status.DeadLettered)
	}
	if err := b.s.DeleteSource(b.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.s.AddSourceDeadLetter(b.ctx, source.NewDeadLetter(a.ID, "m", "r", nil, b.now)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a dead letter of a deleted source: %v; want ErrNotFound", err)
	}
	if got, _, err := b.s.ListSourceDeadLetters(b.ctx, a.ID, store.Page{}); err != nil || len(got) != 0 {
		t.Fatalf("the dead letters of a deleted source: %d, %v; want none", len(got), err)
	}
	if got, _, err := b.s.ListSourceDeadLetters(b.ctx, other.ID, store.Page{}); err != nil || len(got) != 1 {
		t.Fatalf("the other source's dead letters: %d, %v; want 1", len(got), err)
	}
	if err := b.s.DeleteSource(b.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second delete: %v; want ErrNotFound", err)
	}
}

// testSourceLeader: SourceLeader names the node holding a source's lease
// (TryLead of SourceLeaderRole) until its term ends, none before any took
// it or after its term ended, and the new holder after a takeover.
func testSourceLeader(t *testing.T, b *bundle) {
	src := newSource(b, "led")
	createSource(b, src)
	leader := func(at time.Time) (string, time.Time) {
		t.Helper()
		owner, until, err := b.s.SourceLeader(b.ctx, src.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		return owner, until
	}
	if owner, _ := leader(b.now); owner != "" {
		t.Fatalf("SourceLeader before any lease: %q; want none", owner)
	}
	until := b.now.Add(15 * time.Second)
	if won, err := b.s.TryLead(b.ctx, store.SourceLeaderRole(src.ID), "node-a", b.now, until); err != nil || !won {
		t.Fatalf("TryLead: %v, %v", won, err)
	}
	if owner, u := leader(b.now); owner != "node-a" || !u.Equal(until) {
		t.Fatalf("SourceLeader: %q until %v; want node-a until %v", owner, u, until)
	}
	later := until.Add(time.Millisecond)
	if owner, _ := leader(later); owner != "" {
		t.Fatalf("SourceLeader after the term: %q; want none", owner)
	}
	if won, err := b.s.TryLead(b.ctx, store.SourceLeaderRole(src.ID), "node-b", later, later.Add(time.Minute)); err != nil || !won {
		t.Fatalf("TryLead after the term: %v, %v", won, err)
	}
	if owner, _ := leader(later); owner != "node-b" {
		t.Fatalf("SourceLeader after a takeover: %q; want node-b", owner)
	}
}
