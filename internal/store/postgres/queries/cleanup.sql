-- Retention (internal/store/engine/cleanup.go).

-- Old events none of whose deliveries may still be attempted (an event
-- without deliveries qualifies), oldest first.
-- name: CleanupCandidates
SELECT e.seq FROM events AS e
WHERE e.published_at < $1 AND NOT EXISTS (
	SELECT 1 FROM deliveries AS d WHERE d.event_seq = e.seq
	AND d.status NOT IN ('delivered', 'dead_lettered', 'dropped'))
ORDER BY e.published_at LIMIT $2

-- Locks the candidates' deliveries (so none can be redelivered until the
-- transaction ends) and returns the candidates that are still finished.
-- name: CleanupFinished
WITH locked AS (
	SELECT d.event_seq, d.status FROM deliveries AS d WHERE d.event_seq = ANY($1) FOR UPDATE
)
SELECT c.seq FROM unnest($1::int8[]) AS c(seq)
WHERE NOT EXISTS (SELECT 1 FROM locked AS l WHERE l.event_seq = c.seq
	AND l.status NOT IN ('delivered', 'dead_lettered', 'dropped'))

-- name: CleanupAttempts
DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq = ANY($1))

-- name: CleanupDeliveries
DELETE FROM deliveries WHERE event_seq = ANY($1)

-- name: CleanupEvents
DELETE FROM events WHERE seq = ANY($1)

-- name: OldTombstones
SELECT COALESCE(MAX(version), 0) FROM subscription_tombstones WHERE deleted_at < $1

-- name: PruneCatalog
UPDATE counters SET value = GREATEST(value, $1) WHERE name = 'catalog_pruned'

-- name: PruneTombstones
DELETE FROM subscription_tombstones WHERE deleted_at < $1 AND version <= $2
