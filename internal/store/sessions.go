package store

import (
	"context"
	"time"
)

// Session is a signed-in console session as stored (internal/console
// makes them and keeps their rules: the token, idle expiry, the bound per
// key). Every node reads sessions from the store, so a session is valid on
// whichever node serves its request.
type Session struct {
	// Hash is the SHA-256 of the session's token, which only the browser's
	// cookie holds: the store never sees the token.
	Hash []byte
	// KeyHash is the hash of the API key that signed in (auth.Hash), by
	// which every request of the session authenticates the key again.
	KeyHash []byte
	// KeyID is that key's ID ("env" for HERALD_ADMIN_KEY), for logs.
	KeyID      string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// Portal is the scope of a subscriber portal session (internal/console's
	// portal), nil for a console session.
	Portal *PortalScope
}

// PortalScope is what a portal session may reach, and its life: made
// unopened (by POST /v1/portal-sessions), kept by the hash of its
// one-time link's token until OpenPortalSession gives it its cookie's.
type PortalScope struct {
	// AccountID is the one account the session sees.
	AccountID string
	// SubscriptionIDs, when not empty, are the only subscriptions of the
	// account it sees.
	SubscriptionIDs []string
	// ExpiresAt ends the session, opened or not.
	ExpiresAt time.Time
	// OpenedAt is when its link was opened; zero while unopened.
	OpenedAt time.Time
}

// SessionStore keeps console sessions.
type SessionStore interface {
	// CreateSession inserts s and, in the same transaction, deletes the
	// sessions of s.KeyHash beyond the perKey-1 others last seen most
	// recently, so that a key has at most perKey sessions (a few more only
	// while sign-ins of one key race on several nodes). ErrConflict when
	// s.Hash exists.
	// A portal session (s.Portal set) is neither bounded nor counted in the
	// bound: perKey applies to console sessions.
	CreateSession(ctx context.Context, s Session, perKey int) error
	// OpenPortalSession opens the unopened portal session whose hash is
	// link and not expired at `at`: in one statement it sets its OpenedAt
	// and LastSeenAt to at and its Hash to session, and returns it.
	// ErrNotFound when there is no such session (unknown, opened already,
	// expired, or a console session), so a link opens once.
	OpenPortalSession(ctx context.Context, link, session []byte, at time.Time) (Session, error)
	// GetSession returns the session whose Hash is hash, or ErrNotFound.
	GetSession(ctx context.Context, hash []byte) (Session, error)
	// TouchSession sets the session's LastSeenAt to at when it is before
	// seenBefore, and does nothing otherwise (nor for a session that is
	// gone): the caller bounds its writes by choosing seenBefore.
	TouchSession(ctx context.Context, hash []byte, at, seenBefore time.Time) error
	// DeleteSession deletes the session whose Hash is hash; one that is
	// gone already is no error.
	DeleteSession(ctx context.Context, hash []byte) error
	// DeleteIdleSessions deletes the console sessions last seen before
	// `before` and the portal sessions that expired before it, and returns
	// how many it deleted.
	DeleteIdleSessions(ctx context.Context, before time.Time) (int, error)
}
