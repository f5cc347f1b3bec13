package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// portalSession returns an unopened portal session of the key named key,
// its link's token named link, made at b.now and expiring at expires.
func portalSession(b *bundle, link, key string, expires time.Time, subs ...string) store.Session {
	s := session(link, key, b.now)
	s.Portal = &store.PortalScope{AccountID: "acc_portal", SubscriptionIDs: subs, ExpiresAt: expires}
	return s
}

// testPortalOpenOnce: a portal session reads back with its scope; opening
// its link rekeys it to the session's hash, opened and seen at the time,
// once: a second open, an open of the new hash, of a console session or of
// an unknown hash is ErrNotFound and changes nothing.
func testPortalOpenOnce(t *testing.T, b *bundle) {
	p := portalSession(b, "link", "k", b.at(time.Hour), "sub_1", "sub_2")
	console := session("console", "k", b.now)
	createSessions(b, 5, p, console)
	sessionsKept(t, b, []store.Session{p, console}, p, console)
	opened := session("cookie", "k", b.now)
	got, err := b.s.OpenPortalSession(b.ctx, p.Hash, opened.Hash, b.at(time.Minute))
	if err != nil {
		t.Fatalf("OpenPortalSession: %v", err)
	}
	want := p
	scope := *p.Portal
	scope.OpenedAt = b.at(time.Minute)
	want.Hash, want.LastSeenAt, want.Portal = opened.Hash, b.at(time.Minute), &scope
	equal(t, "opened portal session", got, want)
	sessionsKept(t, b, []store.Session{p, opened, console}, want, console)
	other := session("other", "k", b.now)
	for name, link := range map[string][]byte{"again": p.Hash, "the session's hash": opened.Hash,
		"a console session": console.Hash, "unknown": session("nope", "k", b.now).Hash} {
		if got, err := b.s.OpenPortalSession(b.ctx, link, other.Hash, b.at(2*time.Minute)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("OpenPortalSession(%s) = %+v, %v; want ErrNotFound", name, got, err)
		}
	}
	sessionsKept(t, b, []store.Session{p, opened, console, other}, want, console)
}

// testPortalOpenExpired: a link opened at its expiry (or after) is
// ErrNotFound; a session of every subscription reads back with none.
func testPortalOpenExpired(t *testing.T, b *bundle) {
	p := portalSession(b, "link", "k", b.at(time.Hour))
	createSessions(b, 5, p)
	sessionsKept(t, b, []store.Session{p}, p)
	if got, err := b.s.OpenPortalSession(b.ctx, p.Hash, session("c", "k", b.now).Hash, b.at(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenPortalSession at its expiry = %+v, %v; want ErrNotFound", got, err)
	}
	sessionsKept(t, b, []store.Session{p}, p)
}

// testPortalNotBounded: portal sessions of a key are not counted in its
// bound of console sessions, nor deleted by it.
func testPortalNotBounded(t *testing.T, b *bundle) {
	p1 := portalSession(b, "p1", "k", b.at(time.Hour))
	p2 := portalSession(b, "p2", "k", b.at(time.Hour))
	c1, c2 := session("c1", "k", b.at(time.Minute)), session("c2", "k", b.at(2*time.Minute))
	all := []store.Session{p1, p2, c1, c2}
	createSessions(b, 1, all...)
	sessionsKept(t, b, all, p1, p2, c2)
}

// testPortalDeleteExpired: DeleteIdleSessions deletes the portal sessions
// expired before `before` (however recently seen) and keeps the others
// (however long unseen).
func testPortalDeleteExpired(t *testing.T, b *bundle) {
	gone := portalSession(b, "gone", "k", b.at(-time.Minute))
	kept := portalSession(b, "kept", "k", b.at(time.Hour))
	kept.LastSeenAt = b.at(-48 * time.Hour)
	all := []store.Session{gone, kept}
	createSessions(b, 5, all...)
	if n, err := b.s.DeleteIdleSessions(b.ctx, b.now); err != nil || n != 1 {
		t.Fatalf("DeleteIdleSessions = %d, %v; want 1", n, err)
	}
	sessionsKept(t, b, all, kept)
}
