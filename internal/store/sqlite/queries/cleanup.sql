-- Retention (internal/store/engine/cleanup.go). The statements after
-- CleanupCandidates take a round's events as one JSON array of sequences
-- (?1): four statements a round, not four an event, since a small
-- statement's cost is mostly its own (arguments, binding, the program
-- started and reset), and a clean-up that kept pace with a steady
-- publisher spent most of its time on that.

-- Old events none of whose deliveries may still be attempted (an event
-- without deliveries qualifies), oldest first, on events_published.
-- name: CleanupCandidates
SELECT e.seq FROM events AS e INDEXED BY events_published
WHERE e.published_at < ?1 AND NOT EXISTS (
	SELECT 1 FROM deliveries AS d WHERE d.event_seq = e.seq
	AND d.status NOT IN ('delivered', 'dead_lettered', 'dropped'))
ORDER BY e.published_at LIMIT ?2

-- The candidates ?1 still finished: none of their deliveries was
-- redelivered since they were read (the one writer runs this and the
-- deletes after it with nothing between).
-- name: CleanupFinished
SELECT c.value FROM json_each(?1) AS c WHERE c.value NOT IN (SELECT event_seq FROM deliveries
	WHERE event_seq IN (SELECT value FROM json_each(?1)) AND status NOT IN ('delivered', 'dead_lettered', 'dropped'))

-- name: CleanupAttempts
DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq IN (SELECT value FROM json_each(?1)))

-- name: CleanupDeliveries
DELETE FROM deliveries WHERE event_seq IN (SELECT value FROM json_each(?1))

-- name: CleanupEvents
DELETE FROM events WHERE seq IN (SELECT value FROM json_each(?1))

-- name: OldTombstones
SELECT COALESCE(MAX(version), 0) FROM subscription_tombstones WHERE deleted_at < ?1

-- name: PruneCatalog
UPDATE counters SET value = MAX(value, ?1) WHERE name = 'catalog_pruned'

-- name: PruneTombstones
DELETE FROM subscription_tombstones WHERE deleted_at < ?1 AND version <= ?2
