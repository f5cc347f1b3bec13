package drivertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Run checks what the engine asks of every driver, on drv (a database
// with the schema applied and nothing in it, and no write under way):
// that a transaction of Begin commits what fn wrote and rolls back
// nothing of an fn that failed, that Reader and Snapshot read what was
// committed, that a statement with no row scans driver.ErrNoRows, that an
// unknown name is an error naming it, and that a rows statement takes
// more rows than one run of it holds (checkRows). The statements are the
// engine's (console sessions: the smallest table).
func Run(t *testing.T, drv driver.Driver) {
	ctx := context.Background()
	at := time.UnixMilli(1_700_000_000_000)
	sess := func(hash string) store.Session {
		return store.Session{Hash: []byte(hash), KeyHash: []byte("key"), KeyID: "key_1", CreatedAt: at, LastSeenAt: at}
	}
	insert := func(hash string) func(driver.Executor) error {
		return func(x driver.Executor) error {
			s := sess(hash)
			_, err := x.Exec(ctx, "InsertSession", sqlrow.SessionValues(&s)...)
			return err
		}
	}
	if err := write(ctx, drv, insert("kept")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	refused := errors.New("refused")
	if err := write(ctx, drv, func(x driver.Executor) error {
		if err := insert("undone")(x); err != nil {
			return err
		}
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("Write of an fn that failed: %v, want its error", err)
	}
	if got, err := sqlrow.ScanSession(drv.Reader().QueryRow(ctx, "GetSession", []byte("kept"))); err != nil || string(got.Hash) != "kept" {
		t.Fatalf("Reader: the committed session: %+v, %v", got, err)
	}
	err := drv.Snapshot(ctx, func(x driver.Executor) error {
		_, err := sqlrow.ScanSession(x.QueryRow(ctx, "GetSession", []byte("undone")))
		return err
	})
	if !errors.Is(err, driver.ErrNoRows) {
		t.Fatalf("Snapshot: the session of a failed Write: %v, want driver.ErrNoRows", err)
	}
	_, err = drv.Reader().Exec(ctx, "NoSuchStatement")
	if err == nil || !strings.Contains(err.Error(), "NoSuchStatement") {
		t.Fatalf("an unknown statement: %v, want an error naming it", err)
	}
	checkRows(t, drv)
}

// write runs fn in a transaction of drv's and commits it, or rolls it
// back and returns fn's error.
func write(ctx context.Context, drv driver.Driver, fn func(driver.Executor) error) error {
	tx, err := drv.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// checkRows inserts 70 events with one rows statement (InsertEvents: more
// than two of SQLite's runs of 32; its last column, schema_errors, a nil
// []string: NULL in every row), reads back the seq of each as it returns
// them, in order, then finds them all again (EventSeqs) and none a second
// time (a full last column).
func checkRows(t *testing.T, drv driver.Driver) {
	ctx := context.Background()
	const n = 70
	cols := make([][]string, 6)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	at, payload := make([]int64, n), make([][]byte, n)
	for i := range n {
		cols[0][i], cols[1][i], cols[2][i], cols[3][i] = "acct", fmt.Sprintf("ev-%02d", i), "/drivertest", "t"
		at[i], payload[i] = 1_700_000_000_000, []byte("{}")
	}
	read := func(seqs map[string]int64) func(driver.Row) error {
		return func(r driver.Row) error {
			var seq int64
			var acc, id, src string
			err := r.Scan(&seq, &acc, &id, &src)
			seqs[id] = seq
			return err
		}
	}
	inserted, found := map[string]int64{}, map[string]int64{}
	err := write(ctx, drv, func(x driver.Executor) error {
		if err := x.Query(ctx, "InsertEvents", read(inserted), cols[0], cols[1], cols[2], cols[3], cols[4], at, payload, cols[5],
			[]string(nil)); err != nil {
			return err
		}
		return x.Query(ctx, "EventSeqs", read(found), cols[0], cols[1], cols[2])
	})
	if err != nil {
		t.Fatalf("rows statements: %v", err)
	}
	for i := range n {
		id := cols[1][i]
		if inserted[id] == 0 || found[id] != inserted[id] || i > 0 && inserted[id] <= inserted[cols[1][i-1]] {
			t.Fatalf("event %s: inserted at seq %d, found at %d (seqs must rise in input order)", id, inserted[id], found[id])
		}
	}
	again := map[string]int64{}
	err = write(ctx, drv, func(x driver.Executor) error {
		return x.Query(ctx, "InsertEvents", read(again), cols[0], cols[1], cols[2], cols[3], cols[4], at, payload, cols[5], cols[5])
	})
	if err != nil || len(again) != 0 {
		t.Fatalf("inserting stored events again: %d inserted, %v; want none", len(again), err)
	}
}
