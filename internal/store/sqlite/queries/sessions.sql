-- Console and portal sessions (internal/store/engine/sessions.go).

-- name: InsertSession
INSERT INTO console_sessions (hash, key_hash, key_id, created_at, last_seen_at, portal_account, portal_subscriptions, expires_at, opened_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (hash) DO NOTHING

-- A seek of console_sessions_key; portal sessions are not counted.
-- name: TrimSessions
DELETE FROM console_sessions WHERE hash IN (SELECT hash FROM console_sessions
WHERE key_hash = ?1 AND hash <> ?2 AND portal_account IS NULL ORDER BY last_seen_at DESC, hash LIMIT -1 OFFSET ?3)

-- name: GetSession
SELECT hash, key_hash, key_id, created_at, last_seen_at, portal_account, portal_subscriptions, expires_at, opened_at
FROM console_sessions WHERE hash = ?1

-- name: OpenPortalSession
UPDATE console_sessions SET hash = ?1, opened_at = ?2, last_seen_at = ?2
WHERE hash = ?3 AND portal_account IS NOT NULL AND opened_at IS NULL AND expires_at > ?2
RETURNING hash, key_hash, key_id, created_at, last_seen_at, portal_account, portal_subscriptions, expires_at, opened_at

-- name: TouchSession
UPDATE console_sessions SET last_seen_at = ?1 WHERE hash = ?2 AND last_seen_at < ?3

-- name: DeleteSession
DELETE FROM console_sessions WHERE hash = ?1

-- Seeks of console_sessions_idle and console_sessions_expiry.
-- name: DeleteIdleSessions
DELETE FROM console_sessions WHERE (last_seen_at < ?1 AND portal_account IS NULL) OR expires_at < ?1
