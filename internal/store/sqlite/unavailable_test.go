package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite/disktest"
)

// TestFullDisk fills the small filesystem a store's file is on: writes
// then fail as store.ErrUnavailable and Ping says so (its probe write
// fails too) while reads go on; once space is freed the same store (no
// reopening) answers Ping and writes again, and every event it committed
// before is still there.
func TestFullDisk(t *testing.T) {
	dir := disktest.Small(t, 16<<20)
	s := open(t, filepath.Join(dir, "herald.db"))
	ctx := context.Background()
	payload := []byte(`{"pad":"` + strings.Repeat("x", 8<<10) + `"}`)
	event := func(n int) store.NewEvent {
		return store.NewEvent{ID: fmt.Sprint(n), Source: "/full", Type: "t", Payload: payload, PublishedAt: time.UnixMilli(1_700_000_000_000)}
	}
	if _, err := s.Publish(ctx, []store.NewEvent{event(0)}, store.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	free := disktest.Fill(t, dir)
	committed, err := 1, error(nil)
	for ; committed < 100_000; committed++ { // until the write-ahead log cannot grow
		if _, err = s.Publish(ctx, []store.NewEvent{event(committed)}, store.PublishOptions{}); err != nil {
			break
		}
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("publishing on a full disk: %v after %d events, want store.ErrUnavailable", err, committed)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping on a full disk: %v, want store.ErrUnavailable", err)
	}
	if _, err := s.GetAccount(ctx, "acc_default"); err != nil {
		t.Fatalf("a read on a full disk: %v", err)
	}
	free()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping once space is freed: %v", err)
	}
	if _, err := s.Publish(ctx, []store.NewEvent{event(committed)}, store.PublishOptions{}); err != nil {
		t.Fatalf("Publish once space is freed: %v", err)
	}
	for n := range committed {
		res, err := s.Publish(ctx, []store.NewEvent{event(n)}, store.PublishOptions{})
		if err != nil || !res[0].Duplicate {
			t.Fatalf("event %d of %d committed is not kept: %+v, %v", n, committed, res, err)
		}
	}
}
