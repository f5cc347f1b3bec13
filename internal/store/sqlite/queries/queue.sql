-- Queued deliveries and their locks (internal/store/engine/queue.go). The
-- statements that look queued deliveries up repeat the condition of the partial
-- index deliveries_queued, status = 'queued', literally, so that SQLite uses it
-- (0006_queue.sql); INDEXED BY makes one that stops doing so fail instead of
-- scanning the table. The others find a delivery by its ID.

-- The one writer needs no lock: a plain SELECT. The CROSS JOIN reads each
-- entry's event by key: a delivery whose event is not stored yet (a staged
-- publish's, staged.go) is not receivable.
-- name: Receivable
SELECT d.id, d.receives, d.round_start, d.lock_token, octet_length(e.payload)
FROM deliveries AS d INDEXED BY deliveries_queued CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.subscription_id = ?1 AND d.status = 'queued' AND d.next_attempt_at <= ?2
ORDER BY d.next_attempt_at, d.id LIMIT ?3

-- Each token's delivery by key (the token up to its first dot). RETURNING reads
-- only the updated table: the event's columns are subqueries by key.
-- name: LockReceived
UPDATE deliveries SET receives = receives + 1, lock_token = t.value, lock_until = ?2, next_attempt_at = ?2
FROM json_each(?1) AS t WHERE deliveries.id = substr(t.value, 1, instr(t.value, '.') - 1)
RETURNING deliveries.id, deliveries.account_id, deliveries.subscription_id, deliveries.endpoint_id, deliveries.event_seq,
	(SELECT e.id FROM events AS e WHERE e.seq = deliveries.event_seq), (SELECT e.source FROM events AS e WHERE e.seq = deliveries.event_seq), deliveries.status,
	deliveries.attempts, deliveries.round_attempts, deliveries.round_start, deliveries.first_failure,
	deliveries.next_attempt_at, deliveries.last_attempt_at, deliveries.last_status_code, deliveries.last_outcome,
	deliveries.dead_letter_reason, deliveries.created_at, deliveries.delivered_at, deliveries.receives,
	deliveries.dead_letter_of, deliveries.lock_until, COALESCE(deliveries.ordering_key, ''),
	(SELECT e.payload FROM events AS e WHERE e.seq = deliveries.event_seq)

-- name: EndReceived
UPDATE deliveries SET status = ?2, dead_letter_reason = ?3, lock_token = '', lock_until = 0
WHERE id IN (SELECT value FROM json_each(?1))
RETURNING deliveries.id, deliveries.account_id, deliveries.subscription_id, deliveries.endpoint_id, deliveries.event_seq,
	(SELECT e.id FROM events AS e WHERE e.seq = deliveries.event_seq), (SELECT e.source FROM events AS e WHERE e.seq = deliveries.event_seq), deliveries.status,
	deliveries.attempts, deliveries.round_attempts, deliveries.round_start, deliveries.first_failure,
	deliveries.next_attempt_at, deliveries.last_attempt_at, deliveries.last_status_code, deliveries.last_outcome,
	deliveries.dead_letter_reason, deliveries.created_at, deliveries.delivered_at, deliveries.receives,
	deliveries.dead_letter_of, deliveries.lock_until, COALESCE(deliveries.ordering_key, '')

-- One seek; the first entries' events read by key, as in Receivable.
-- name: NextQueued
SELECT (SELECT d.next_attempt_at FROM deliveries AS d INDEXED BY deliveries_queued
	CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.subscription_id = ?1 AND d.status = 'queued' ORDER BY d.next_attempt_at LIMIT 1)

-- name: CountQueued
SELECT COUNT(*) FROM (SELECT 1 FROM deliveries AS d INDEXED BY deliveries_queued WHERE d.status = 'queued')

-- Settle: each delivery by key; the unary + keeps the subscription off
-- deliveries_queued. No delivery is given twice, and a delivery's lock token
-- names it, so a lock_token among the tokens is its delivery's.
-- name: SettleAcknowledge
UPDATE deliveries SET status = 'delivered', delivered_at = ?2, lock_token = '', lock_until = 0
WHERE id IN (SELECT value FROM json_each(?3)) AND +subscription_id = ?1 AND status = 'queued'
	AND lock_token IN (SELECT value FROM json_each(?4)) AND lock_until > ?2
RETURNING id

-- name: SettleRelease
UPDATE deliveries SET next_attempt_at = ?5, lock_token = '', lock_until = 0
WHERE id IN (SELECT value FROM json_each(?3)) AND +subscription_id = ?1 AND status = 'queued'
	AND lock_token IN (SELECT value FROM json_each(?4)) AND lock_until > ?2
RETURNING id

-- name: SettleReject
UPDATE deliveries SET status = ?5, dead_letter_reason = ?6, lock_token = '', lock_until = 0
WHERE id IN (SELECT value FROM json_each(?3)) AND +subscription_id = ?1 AND status = 'queued'
	AND lock_token IN (SELECT value FROM json_each(?4)) AND lock_until > ?2
RETURNING id

-- name: SettleRenew
UPDATE deliveries SET lock_until = ?5, next_attempt_at = ?5
WHERE id IN (SELECT value FROM json_each(?3)) AND +subscription_id = ?1 AND status = 'queued'
	AND lock_token IN (SELECT value FROM json_each(?4)) AND lock_until > ?2
RETURNING id

-- Each delivery by key (WHERE: SQLite's upsert after a SELECT needs one).
-- name: AddAcknowledgedStats
INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered)
SELECT ?2, d.account_id, d.subscription_id, d.endpoint_id, count(*)
FROM deliveries AS d WHERE d.id IN (SELECT value FROM json_each(?1))
GROUP BY d.account_id, d.subscription_id, d.endpoint_id
ON CONFLICT (minute, subscription_id, endpoint_id) DO UPDATE SET delivered = delivery_stats.delivered + excluded.delivered
