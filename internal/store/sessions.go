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
}

// SessionStore keeps console sessions.
type SessionStore interface {
	// CreateSession inserts s and, in the same transaction, deletes the
	// sessions of s.KeyHash beyond the perKey-1 others last seen most
	// recently, so that a key has at most perKey sessions (a few more only
	// while sign-ins of one key race on several nodes). ErrConflict when
	// s.Hash exists.
	CreateSession(ctx context.Context, s Session, perKey int) error
	// GetSession returns the session whose Hash is hash, or ErrNotFound.
	GetSession(ctx context.Context, hash []byte) (Session, error)
	// TouchSession sets the session's LastSeenAt to at when it is before
	// seenBefore, and does nothing otherwise (nor for a session that is
	// gone): the caller bounds its writes by choosing seenBefore.
	TouchSession(ctx context.Context, hash []byte, at, seenBefore time.Time) error
	// DeleteSession deletes the session whose Hash is hash; one that is
	// gone already is no error.
	DeleteSession(ctx context.Context, hash []byte) error
	// DeleteIdleSessions deletes the sessions last seen before `before`
	// and returns how many it deleted.
	DeleteIdleSessions(ctx context.Context, before time.Time) (int, error)
}
