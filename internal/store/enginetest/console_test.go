package enginetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// RunConsoleContract checks what the console asks of the store
// (console.Store, in internal/console: the session methods): sessions kept
// by their hash, touched only when last seen before a time, bounded per
// key, deleted one by one and when idle; portal sessions (console_portal.go
// beside this file) opened once, not bounded, deleted when expired.
func RunConsoleContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Sessions", []test{
			{"RoundTrip", testSessionRoundTrip},
			{"Touch", testSessionTouch},
			{"BoundPerKey", testSessionBound},
			{"DeleteIdle", testIdleSessions},
		}},
		{"PortalSessions", []test{
			{"OpenOnce", testPortalOpenOnce},
			{"OpenExpired", testPortalOpenExpired},
			{"NotBounded", testPortalNotBounded},
			{"DeleteExpired", testPortalDeleteExpired},
		}},
	})
}

// session returns a session of the key named key, its token named token,
// last seen at seen.
func session(token, key string, seen time.Time) store.Session {
	h, k := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(key))
	return store.Session{Hash: h[:], KeyHash: k[:], KeyID: "key_" + key, CreatedAt: seen, LastSeenAt: seen}
}

// createSessions creates sessions, perKey sessions a key at most.
func createSessions(b *bundle, perKey int, ss ...store.Session) {
	b.t.Helper()
	for _, s := range ss {
		if err := b.s.CreateSession(b.ctx, s, perKey); err != nil {
			b.t.Fatalf("CreateSession(%s): %v", s.KeyID, err)
		}
	}
}

// sessionsKept fails the test unless exactly the sessions of want, of
// all, are stored (as created, or as want has them).
func sessionsKept(t *testing.T, b *bundle, all []store.Session, want ...store.Session) {
	t.Helper()
	kept := map[string]store.Session{}
	for _, s := range want {
		kept[string(s.Hash)] = s
	}
	for i, s := range all {
		got, err := b.s.GetSession(b.ctx, s.Hash)
		w, ok := kept[string(s.Hash)]
		switch {
		case ok && err != nil:
			t.Fatalf("session %d: %v; want it kept", i, err)
		case ok:
			equal(t, fmt.Sprintf("session %d", i), got, w)
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("session %d: %+v, %v; want ErrNotFound", i, got, err)
		}
	}
}

// testSessionRoundTrip: a session reads back as created, by its hash; an
// unknown hash (or none) is ErrNotFound; a second session of the same hash
// is ErrConflict and changes nothing; deleting one that is gone is no
// error.
func testSessionRoundTrip(t *testing.T, b *bundle) {
	s := session("tok", "k", b.now)
	s.CreatedAt = b.at(-time.Minute)
	createSessions(b, 5, s)
	sessionsKept(t, b, []store.Session{s}, s)
	for _, h := range [][]byte{nil, {}, session("other", "k", b.now).Hash} {
		if got, err := b.s.GetSession(b.ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetSession(%x) = %+v, %v; want ErrNotFound", h, got, err)
		}
	}
	again := s
	again.KeyID, again.LastSeenAt = "key_other", b.at(time.Hour)
	if err := b.s.CreateSession(b.ctx, again, 5); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateSession of a hash stored = %v; want ErrConflict", err)
	}
	sessionsKept(t, b, []store.Session{s}, s)
	for range 2 {
		if err := b.s.DeleteSession(b.ctx, s.Hash); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
	}
	sessionsKept(t, b, []store.Session{s})
}

// testSessionTouch: TouchSession moves LastSeenAt only when the session
// was last seen before seenBefore (not at it), and touching a session that
// is gone is no error.
func testSessionTouch(t *testing.T, b *bundle) {
	s := session("tok", "k", b.now)
	createSessions(b, 5, s)
	if err := b.s.TouchSession(b.ctx, s.Hash, b.at(30*time.Second), b.now); err != nil {
		t.Fatal(err)
	}
	sessionsKept(t, b, []store.Session{s}, s) // last seen at seenBefore: kept
	if err := b.s.TouchSession(b.ctx, s.Hash, b.at(time.Minute), b.at(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	touched := s
	touched.LastSeenAt = b.at(time.Minute)
	sessionsKept(t, b, []store.Session{s}, touched)
	gone := session("gone", "k", b.now)
	if err := b.s.TouchSession(b.ctx, gone.Hash, b.at(time.Hour), b.at(time.Hour)); err != nil {
		t.Fatalf("TouchSession of no session: %v", err)
	}
	sessionsKept(t, b, []store.Session{s, gone}, touched)
}

// testSessionBound: a key keeps at most perKey sessions: a new one
// deletes those of the key beyond the perKey-1 others last seen most
// recently, and is kept itself even when its LastSeenAt is older than
// theirs (another node's clock); other keys' sessions stay.
func testSessionBound(t *testing.T, b *bundle) {
	var all []store.Session
	for i := range 4 {
		all = append(all, session(fmt.Sprint("a", i), "a", b.at(time.Duration(i)*time.Minute)))
	}
	other := session("b0", "b", b.now)
	all = append(all, other)
	createSessions(b, 3, all[0], other, all[1], all[2])
	sessionsKept(t, b, all, all[0], all[1], all[2], other)
	createSessions(b, 3, all[3])
	sessionsKept(t, b, all, all[1], all[2], all[3], other)
	// A new session last seen before the others: they go but the newest.
	old := session("a-old", "a", b.at(-time.Hour))
	all = append(all, old)
	createSessions(b, 2, old)
	sessionsKept(t, b, all, all[3], old, other)
	one := session("a-one", "a", b.at(time.Hour))
	all = append(all, one)
	createSessions(b, 1, one)
	sessionsKept(t, b, all, one, other)
}

// testIdleSessions: DeleteIdleSessions deletes the sessions last seen
// before `before` (not at it) and says how many.
func testIdleSessions(t *testing.T, b *bundle) {
	all := []store.Session{
		session("t0", "a", b.at(-2*time.Hour)), session("t1", "b", b.at(-time.Hour)),
		session("t2", "a", b.at(-time.Minute)), session("t3", "c", b.now),
	}
	createSessions(b, 5, all...)
	n, err := b.s.DeleteIdleSessions(b.ctx, b.at(-time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("DeleteIdleSessions = %d, %v; want 2", n, err)
	}
	sessionsKept(t, b, all, all[2], all[3])
	if n, err := b.s.DeleteIdleSessions(b.ctx, b.at(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("DeleteIdleSessions again = %d, %v; want 0", n, err)
	}
}
