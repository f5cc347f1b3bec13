-- Queued deliveries and their locks (internal/store/engine/queue.go). The
-- queued deliveries are found in the partial indexes of open_deliveries
-- (0021_open_deliveries.sql); the statements repeat their WHERE clause,
-- status = 'queued', literally, so that every plan, generic ones included, can
-- use them, and repeat the conditions on the deliveries row they lock, so
-- that the re-check after a lock judges the row as it is now.

-- Locks its rows: two receives, on any nodes, never get the same delivery, and a
-- delivery one of them locked is receivable again only once its lock_until has
-- passed by the other's now (nodes' clocks must agree to well within a lock).
-- octet_length reads a TOASTed value's size, not the value.
-- name: Receivable
SELECT d.id, d.receives, d.round_start, d.lock_token,
	coalesce((SELECT octet_length(e.payload) FROM events AS e WHERE e.seq = d.event_seq), 0)
FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
WHERE o.subscription_id = $1 AND o.status = 'queued' AND o.next_attempt_at <= $2
	AND d.subscription_id = $1 AND d.status = 'queued' AND d.next_attempt_at <= $2
ORDER BY o.next_attempt_at, o.id
LIMIT $3
FOR UPDATE OF d SKIP LOCKED

-- Each token's delivery by key (the token up to its first dot).
-- name: LockReceived
UPDATE deliveries AS d SET receives = d.receives + 1, next_attempt_at = $2, lock_token = t.token, lock_until = $2
FROM unnest($1::text[]) AS t(token), events AS e
WHERE d.id = split_part(t.token, '.', 1) AND e.seq = d.event_seq
RETURNING d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''), e.payload

-- name: EndReceived
UPDATE deliveries AS d SET status = $2, dead_letter_reason = $3, lock_token = '', lock_until = 0
FROM events AS e
WHERE d.id = ANY($1) AND e.seq = d.event_seq
RETURNING d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')

-- name: NextQueued
SELECT o.next_attempt_at FROM open_deliveries AS o
WHERE o.subscription_id = $1 AND o.status = 'queued'
ORDER BY o.next_attempt_at, o.id
LIMIT 1

-- name: CountQueued
SELECT COUNT(*) FROM open_deliveries AS o WHERE o.status = 'queued'

-- Settle: each delivery a primary-key seek: the subscription is compared as an
-- expression (|| ''), which no index serves, or the planner may prefer to scan
-- the subscription's entries of open_deliveries_queued for each token.
-- name: SettleAcknowledge
UPDATE deliveries AS d SET status = 'delivered', delivered_at = $2, lock_token = '', lock_until = 0
FROM unnest($3::text[], $4::text[]) AS t(id, token)
WHERE d.id = t.id AND d.subscription_id || '' = $1 AND d.status = 'queued' AND d.lock_token = t.token AND d.lock_until > $2
RETURNING d.id

-- name: SettleRelease
UPDATE deliveries AS d SET next_attempt_at = $5, lock_token = '', lock_until = 0
FROM unnest($3::text[], $4::text[]) AS t(id, token)
WHERE d.id = t.id AND d.subscription_id || '' = $1 AND d.status = 'queued' AND d.lock_token = t.token AND d.lock_until > $2
RETURNING d.id

-- name: SettleReject
UPDATE deliveries AS d SET status = $5, dead_letter_reason = $6, lock_token = '', lock_until = 0
FROM unnest($3::text[], $4::text[]) AS t(id, token)
WHERE d.id = t.id AND d.subscription_id || '' = $1 AND d.status = 'queued' AND d.lock_token = t.token AND d.lock_until > $2
RETURNING d.id

-- name: SettleRenew
UPDATE deliveries AS d SET next_attempt_at = $5, lock_until = $5
FROM unnest($3::text[], $4::text[]) AS t(id, token)
WHERE d.id = t.id AND d.subscription_id || '' = $1 AND d.status = 'queued' AND d.lock_token = t.token AND d.lock_until > $2
RETURNING d.id

-- In key order, so that concurrent upserts of the same rows do not deadlock.
-- name: AddAcknowledgedStats
INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered)
SELECT $2, d.account_id, d.subscription_id, d.endpoint_id, count(*)
FROM deliveries AS d WHERE d.id = ANY($1)
GROUP BY d.account_id, d.subscription_id, d.endpoint_id ORDER BY d.subscription_id, d.endpoint_id
ON CONFLICT (minute, subscription_id, endpoint_id) DO UPDATE SET delivered = delivery_stats.delivered + excluded.delivered
