package console_test

import (
	"net/url"
	"testing"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// TestSessionOnEveryNode: a session lives in the store, so a second Herald
// process on the same store serves it. On SQLite (one process a file) the
// second process is the first one started again on its data directory;
// on PostgreSQL two processes share the database at once, and signing out
// on one ends the session on the other.
func TestSessionOnEveryNode(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		dir := t.TempDir()
		first := newNode(t, dir, "", clock.NewFake(start), false)
		cookie := first.signIn(adminKey)
		first.signedIn(cookie)
		first.close()
		second := newNode(t, dir, "", clock.NewFake(start), false)
		second.signedIn(cookie)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		db := pgtest.SchemaURL(t)
		a := newNode(t, t.TempDir(), db, clock.NewFake(start), false)
		b := newNode(t, t.TempDir(), db, clock.NewFake(start), false)
		cookie := a.signIn(adminKey)
		token := csrfOf(t, b.signedIn(cookie))
		if got := csrfOf(t, a.signedIn(cookie)); got != token {
			t.Fatalf("the session's CSRF token differs between nodes: %q, %q", got, token)
		}
		b.post("/console/logout", cookie, url.Values{"csrf": {token}})
		a.signedOut(cookie)
		b.signedOut(cookie)
	})
}
