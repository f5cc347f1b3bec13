//go:build unix

package sqlite

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/subscription"
)

// withUmask runs the rest of the test under umask mask (the process's:
// this package's tests that change it do not run in parallel).
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// checkPrivate checks that dir is 0700 and that the database at dir/base
// and the files beside it are 0600, after a write (so that the -wal
// exists).
func checkPrivate(t *testing.T, s *Store, dir string) {
	t.Helper()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.CreateSubscription(context.Background(), subscription.Subscription{ID: "sub_1", Name: "a",
		URL: "https://usr:pw@a.example/hook", EventTypes: []string{"x"}, State: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"": 0o700 | fs.ModeDir, "herald.db": 0o600, "herald.db-wal": 0o600,
		"herald.db-shm": 0o600, "herald.db.lock": 0o600}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", filepath.Join(dir, name), fi.Mode(), mode)
		}
	}
}

// TestFilesArePrivate: a new database's directory is made 0700 and its
// files (the database, its -wal and -shm, the lock) 0600, whatever the
// umask.
func TestFilesArePrivate(t *testing.T) {
	withUmask(t, 0)
	dir := filepath.Join(t.TempDir(), "data")
	checkPrivate(t, open(t, filepath.Join(dir, "herald.db")), dir)
}

// TestFilesMadePrivate: a data directory (0755) and a database (0644,
// with its lock file) left by an earlier release are made private when
// the store is opened, and so are the -wal and -shm files SQLite makes
// after.
func TestFilesMadePrivate(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "herald.db")
	if err := open(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"herald.db", "herald.db.lock"} {
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkPrivate(t, open(t, path), dir)
}
