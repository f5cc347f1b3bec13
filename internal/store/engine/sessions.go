package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Console and portal sessions (store.SessionStore).
var (
	// qInsertSession inserts a session (sqlrow.SessionValues), nothing when
	// its hash is stored.
	qInsertSession = query("InsertSession")
	// qTrimSessions deletes a key's console sessions ($1) but one ($2)
	// beyond the $3 others last seen most recently.
	qTrimSessions = query("TrimSessions")
	// qGetSession reads the session of hash $1 (sqlrow.SessionCols).
	qGetSession = query("GetSession")
	// qOpenPortalSession opens the unopened, unexpired portal session $3
	// as $1 at $2 and returns it (sqlrow.SessionCols).
	qOpenPortalSession = query("OpenPortalSession")
	// qTouchSession sets last_seen_at to $1 for session $2 when it is
	// before $3.
	qTouchSession = query("TouchSession")
	// qDeleteSession deletes session $1.
	qDeleteSession = query("DeleteSession")
	// qDeleteIdleSessions deletes console sessions last seen, and portal
	// sessions expired, before $1.
	qDeleteIdleSessions = query("DeleteIdleSessions")
)

// CreateSession implements store.SessionStore: the insert and the trim of
// the key's other console sessions are one transaction.
func (s *Store) CreateSession(ctx context.Context, sess store.Session, perKey int) error {
	return s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qInsertSession, sqlrow.SessionValues(&sess)...)
		switch {
		case err != nil:
			return fmt.Errorf("insert session: %w", err)
		case n == 0:
			return fmt.Errorf("session exists: %w", store.ErrConflict)
		case sess.Portal != nil:
			return nil
		}
		if _, err := x.Exec(ctx, qTrimSessions, sess.KeyHash, sess.Hash, max(perKey-1, 0)); err != nil {
			return fmt.Errorf("trim the key's sessions: %w", err)
		}
		return nil
	})
}

// GetSession implements store.SessionStore.
func (s *Store) GetSession(ctx context.Context, hash []byte) (store.Session, error) {
	sess, err := sqlrow.ScanSession(s.drv.Reader().QueryRow(ctx, qGetSession, orEmpty(hash)))
	if errors.Is(err, driver.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	return sess, err
}

// OpenPortalSession implements store.SessionStore.
func (s *Store) OpenPortalSession(ctx context.Context, link, session []byte, at time.Time) (store.Session, error) {
	var sess store.Session
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		sess, err = sqlrow.ScanSession(x.QueryRow(ctx, qOpenPortalSession, orEmpty(session), sqlrow.UnixMS(at), orEmpty(link)))
		return err
	})
	if errors.Is(err, driver.ErrNoRows) {
		return store.Session{}, fmt.Errorf("portal session: %w", store.ErrNotFound)
	}
	return sess, err
}

// TouchSession implements store.SessionStore.
func (s *Store) TouchSession(ctx context.Context, hash []byte, at, seenBefore time.Time) error {
	return s.exec(ctx, qTouchSession, sqlrow.UnixMS(at), orEmpty(hash), sqlrow.UnixMS(seenBefore))
}

// DeleteSession implements store.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	return s.exec(ctx, qDeleteSession, orEmpty(hash))
}

// DeleteIdleSessions implements store.SessionStore.
func (s *Store) DeleteIdleSessions(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(x driver.Executor) error {
		var err error
		n, err = x.Exec(ctx, qDeleteIdleSessions, sqlrow.UnixMS(before))
		return err
	})
	return int(n), err
}
