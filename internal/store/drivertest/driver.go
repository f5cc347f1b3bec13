package drivertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Run checks what the engine asks of every driver, on drv (a database
// with the schema applied and nothing in it): that Write commits what fn
// wrote and nothing of an fn that failed, that Reader and Snapshot read
// what was committed, that a statement with no row scans
// driver.ErrNoRows, and that an unknown name is an error naming it. The
// statements are the engine's (console sessions: the smallest table).
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
	if err := drv.Write(ctx, insert("kept")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	refused := errors.New("refused")
	if err := drv.Write(ctx, func(x driver.Executor) error {
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
}
