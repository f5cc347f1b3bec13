package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// insertSessionSQL inserts nothing when the hash exists (the caller
	// sees no row affected).
	insertSessionSQL = `INSERT INTO console_sessions (` + sqlrow.SessionCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (hash) DO NOTHING`
	getSessionSQL = `SELECT ` + sqlrow.SessionCols + ` FROM console_sessions WHERE hash = $1`
	// trimSessionsSQL deletes a key's sessions ($1) but one ($2) beyond
	// the $3 others last seen most recently: a seek of console_sessions_key.
	// Portal sessions are not counted.
	trimSessionsSQL = `DELETE FROM console_sessions WHERE hash IN (SELECT hash FROM console_sessions
WHERE key_hash = $1 AND hash <> $2 AND portal_account IS NULL ORDER BY last_seen_at DESC, hash OFFSET $3)`
	// openPortalSQL opens an unopened, unexpired portal session ($3) as $1
	// at $2.
	openPortalSQL = `UPDATE console_sessions SET hash = $1, opened_at = $2, last_seen_at = $2
WHERE hash = $3 AND portal_account IS NOT NULL AND opened_at IS NULL AND expires_at > $2 RETURNING ` + sqlrow.SessionCols
	touchSessionSQL  = `UPDATE console_sessions SET last_seen_at = $1 WHERE hash = $2 AND last_seen_at < $3`
	deleteSessionSQL = `DELETE FROM console_sessions WHERE hash = $1`
	// deleteIdleSessionsSQL: console sessions idle, portal sessions
	// expired, before $1 (seeks of console_sessions_idle and
	// console_sessions_expiry).
	deleteIdleSessionsSQL = `DELETE FROM console_sessions WHERE (last_seen_at < $1 AND portal_account IS NULL) OR expires_at < $1`
)

// CreateSession implements store.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess store.Session, perKey int) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, insertSessionSQL, sqlrow.SessionValues(&sess)...)
		switch {
		case err != nil:
			return fmt.Errorf("insert session: %w", err)
		case tag.RowsAffected() == 0:
			return fmt.Errorf("session exists: %w", store.ErrConflict)
		}
		if sess.Portal != nil {
			return nil
		}
		if _, err := tx.Exec(ctx, trimSessionsSQL, sess.KeyHash, sess.Hash, max(perKey-1, 0)); err != nil {
			return fmt.Errorf("trim the key's sessions: %w", err)
		}
		return nil
	})
}

// GetSession implements store.SessionStore.
func (s *Store) GetSession(ctx context.Context, hash []byte) (store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return store.Session{}, err
	}
	sess, err := queryRow(ctx, s, sqlrow.ScanSession, getSessionSQL, orEmpty(hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	return sess, s.err(err)
}

// OpenPortalSession implements store.SessionStore.
func (s *Store) OpenPortalSession(ctx context.Context, link, session []byte, at time.Time) (store.Session, error) {
	if err := s.checkOpen(); err != nil {
		return store.Session{}, err
	}
	sess, err := queryRow(ctx, s, sqlrow.ScanSession, openPortalSQL, orEmpty(session), sqlrow.UnixMS(at), orEmpty(link))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("portal session: %w", store.ErrNotFound)
	}
	return sess, s.err(err)
}

// TouchSession implements store.SessionStore.
func (s *Store) TouchSession(ctx context.Context, hash []byte, at, seenBefore time.Time) error {
	_, err := s.sessionExec(ctx, touchSessionSQL, sqlrow.UnixMS(at), orEmpty(hash), sqlrow.UnixMS(seenBefore))
	return err
}

// DeleteSession implements store.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	_, err := s.sessionExec(ctx, deleteSessionSQL, orEmpty(hash))
	return err
}

// DeleteIdleSessions implements store.SessionStore.
func (s *Store) DeleteIdleSessions(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.sessionExec(ctx, deleteIdleSessionsSQL, sqlrow.UnixMS(before))
	return int(tag.RowsAffected()), err
}

// sessionExec runs one statement of the session store (see exec).
func (s *Store) sessionExec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := s.checkOpen(); err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := s.exec(ctx, sql, args...)
	return tag, s.err(err)
}

// orEmpty is b, or an empty slice for nil: pgx sends a nil []byte as NULL,
// which matches no hash (and is refused by NOT NULL).
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
