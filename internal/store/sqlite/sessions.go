package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	insertSessionSQL = `INSERT INTO console_sessions (` + sqlrow.SessionCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	getSessionSQL    = `SELECT ` + sqlrow.SessionCols + ` FROM console_sessions WHERE hash = ?`
	sessionExistsSQL = `SELECT 1 FROM console_sessions WHERE hash = ?`
	// trimSessionsSQL deletes a key's sessions (?1) but one (?2) beyond
	// the ?3 others last seen most recently: a seek of console_sessions_key.
	// Portal sessions are not counted.
	trimSessionsSQL = `DELETE FROM console_sessions WHERE hash IN (SELECT hash FROM console_sessions
WHERE key_hash = ?1 AND hash <> ?2 AND portal_account IS NULL ORDER BY last_seen_at DESC, hash LIMIT -1 OFFSET ?3)`
	// openPortalSQL opens an unopened, unexpired portal session (?3) as ?1
	// at ?2.
	openPortalSQL = `UPDATE console_sessions SET hash = ?1, opened_at = ?2, last_seen_at = ?2
WHERE hash = ?3 AND portal_account IS NOT NULL AND opened_at IS NULL AND expires_at > ?2 RETURNING ` + sqlrow.SessionCols
	touchSessionSQL  = `UPDATE console_sessions SET last_seen_at = ? WHERE hash = ? AND last_seen_at < ?`
	deleteSessionSQL = `DELETE FROM console_sessions WHERE hash = ?`
	// deleteIdleSessionsSQL: console sessions idle, portal sessions
	// expired, before ?1 (seeks of console_sessions_idle and
	// console_sessions_expiry).
	deleteIdleSessionsSQL = `DELETE FROM console_sessions WHERE (last_seen_at < ?1 AND portal_account IS NULL) OR expires_at < ?1`
)

// CreateSession implements store.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess store.Session, perKey int) error {
	return s.write(ctx, func(w *writer) error {
		switch ok, err := w.exists(sessionExistsSQL, sess.Hash); {
		case err != nil:
			return fmt.Errorf("read session: %w", err)
		case ok:
			return fmt.Errorf("session exists: %w", store.ErrConflict)
		}
		if _, err := w.exec(insertSessionSQL, sqlrow.SessionValues(&sess)...); err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		if sess.Portal != nil {
			return nil
		}
		if _, err := w.exec(trimSessionsSQL, sess.KeyHash, sess.Hash, max(perKey-1, 0)); err != nil {
			return fmt.Errorf("trim the key's sessions: %w", err)
		}
		return nil
	})
}

// GetSession implements store.SessionStore.
func (s *Store) GetSession(ctx context.Context, hash []byte) (store.Session, error) {
	sess, err := sqlrow.ScanSession(s.readRow(ctx, getSessionSQL, hash))
	if isNoRows(err) {
		return store.Session{}, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	return sess, s.readErr(err)
}

// OpenPortalSession implements store.SessionStore.
func (s *Store) OpenPortalSession(ctx context.Context, link, session []byte, at time.Time) (store.Session, error) {
	var sess store.Session
	err := s.write(ctx, func(w *writer) error {
		var err error
		sess, err = sqlrow.ScanSession(w.row(openPortalSQL, session, sqlrow.UnixMS(at), link))
		return err
	})
	if isNoRows(err) {
		return store.Session{}, fmt.Errorf("portal session: %w", store.ErrNotFound)
	}
	return sess, err
}

// TouchSession implements store.SessionStore.
func (s *Store) TouchSession(ctx context.Context, hash []byte, at, seenBefore time.Time) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(touchSessionSQL, sqlrow.UnixMS(at), hash, sqlrow.UnixMS(seenBefore))
		return err
	})
}

// DeleteSession implements store.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(deleteSessionSQL, hash)
		return err
	})
}

// DeleteIdleSessions implements store.SessionStore.
func (s *Store) DeleteIdleSessions(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		var err error
		n, err = w.execN(deleteIdleSessionsSQL, sqlrow.UnixMS(before))
		return err
	})
	return int(n), err
}
