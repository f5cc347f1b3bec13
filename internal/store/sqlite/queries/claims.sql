-- Claims and leases of the due loader, and the counts of the backlog
-- (internal/store/engine/claims.go, claims_keys.go).
--
-- The lanes: each condition repeats the WHERE clause of its partial index
-- in 0001_init.sql word for word:
--   fresh  d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0  (deliveries_fresh)
--   retry  d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0  (deliveries_retry)
-- SQLite uses a partial index only when the query implies its condition,
-- and INDEXED BY makes a query that stops doing so fail instead of
-- silently scanning the table. A leased delivery leaves its lane's index.
-- A lease lasts until released (the store is not shared: its leases never
-- expire), so no statement here reads the time the engine passes to judge
-- leases by (NextDue's ?2, DueEndpoints' ?1).
--
-- keyHead, written out in ClaimDue and NextDue: d is unordered, or its
-- key's head: no pending delivery of its subscription and key has an
-- earlier event (a smaller event_seq: publish order, as the single writer
-- commits) (deliveries_ordering: one seek to the key's first entry), and
-- none holds a lease (deliveries_ordering_leased: one seek).

-- Both lanes in one compound statement: each arm walks its lane's index in
-- due order (a co-routine), and the retry arm runs only for what the fresh
-- one leaves of ?3. It only reads: the one writer runs one claim at a
-- time, and LeaseClaimed leases what it read. ?4 and ?5 (the lease) are
-- not read.
-- name: ClaimDue
SELECT * FROM (
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at,
	d.receives, d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''), e.payload, COALESCE(e.trace_context, '')
FROM deliveries AS d INDEXED BY deliveries_fresh CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.endpoint_id = ?1 AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0 AND d.next_attempt_at <= ?2 AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h INDEXED BY deliveries_ordering
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l INDEXED BY deliveries_ordering_leased
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.lease_until > 0 AND l.ordering_key IS NOT NULL)))
ORDER BY d.next_attempt_at LIMIT ?3)
UNION ALL
SELECT * FROM (
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at,
	d.receives, d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''), e.payload, COALESCE(e.trace_context, '')
FROM deliveries AS d INDEXED BY deliveries_retry CROSS JOIN events AS e ON e.seq = d.event_seq
WHERE d.endpoint_id = ?1 AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0 AND d.next_attempt_at <= ?2 AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h INDEXED BY deliveries_ordering
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l INDEXED BY deliveries_ordering_leased
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.lease_until > 0 AND l.ordering_key IS NOT NULL)))
ORDER BY d.next_attempt_at LIMIT ?3)
LIMIT ?3

-- Each delivery by its key.
-- name: LeaseClaimed
UPDATE deliveries SET lease_owner = ?1, lease_until = ?2 WHERE id IN (SELECT value FROM json_each(?3))

-- Not run here (the store is not shared): the one writer runs one claim at
-- a time, and each sees the leases of those before it, so no key needs a
-- lock. It finds no lock busy.
-- name: ClaimKeyLocks
SELECT value FROM json_each(?1) WHERE 0

-- Not run here (the store is not shared): ClaimDue judged every key on
-- what every earlier claim committed. It gives back no lease.
-- name: ClaimKeyRecheck
SELECT value FROM json_each(?1) WHERE 0

-- name: ClaimDeadLetters
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at,
	d.receives, d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id IN (SELECT value FROM json_each(?1))

-- name: ReleaseLeases
UPDATE deliveries SET lease_owner = '', lease_until = 0
WHERE id IN (SELECT value FROM json_each(?1)) AND lease_owner = ?2 AND lease_until <> 0

-- name: ExtendLeases
UPDATE deliveries SET lease_until = ?3
WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'pending' AND lease_owner = ?2 AND lease_until <> 0
RETURNING id

-- The first claimable entry of each lane: a walk on (endpoint_id,
-- next_attempt_at) that stops at the first delivery passing keyHead (the
-- first entry when no key waits). ?2 is not read.
-- name: NextDue
SELECT MIN(at) FROM (
SELECT * FROM (SELECT d.next_attempt_at AS at FROM deliveries AS d INDEXED BY deliveries_fresh
	WHERE d.endpoint_id = ?1 AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0 AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h INDEXED BY deliveries_ordering
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l INDEXED BY deliveries_ordering_leased
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.lease_until > 0 AND l.ordering_key IS NOT NULL))) ORDER BY d.next_attempt_at LIMIT 1)
UNION ALL
SELECT * FROM (SELECT d.next_attempt_at FROM deliveries AS d INDEXED BY deliveries_retry
	WHERE d.endpoint_id = ?1 AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0 AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM deliveries AS h INDEXED BY deliveries_ordering
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM deliveries AS l INDEXED BY deliveries_ordering_leased
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.lease_until > 0 AND l.ordering_key IS NOT NULL))) ORDER BY d.next_attempt_at LIMIT 1))

-- Each lane's index walked from one endpoint to the next (a skip scan: one
-- seek per endpoint), and each endpoint's first, hence earliest, entry.
-- ?1 is not read.
-- name: DueEndpoints
WITH RECURSIVE
fresh(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_fresh WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_fresh
		WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0 AND d.endpoint_id > fresh.ep)
	FROM fresh WHERE fresh.ep IS NOT NULL
),
retry(ep) AS (
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_retry WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0)
	UNION ALL
	SELECT (SELECT MIN(d.endpoint_id) FROM deliveries AS d INDEXED BY deliveries_retry
		WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0 AND d.endpoint_id > retry.ep)
	FROM retry WHERE retry.ep IS NOT NULL
)
SELECT ep, MIN(at) FROM (
	SELECT fresh.ep AS ep, (SELECT MIN(d.next_attempt_at) FROM deliveries AS d INDEXED BY deliveries_fresh
		WHERE d.endpoint_id = fresh.ep AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0) AS at
	FROM fresh WHERE fresh.ep IS NOT NULL
	UNION ALL
	SELECT retry.ep, (SELECT MIN(d.next_attempt_at) FROM deliveries AS d INDEXED BY deliveries_retry
		WHERE d.endpoint_id = retry.ep AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0)
	FROM retry WHERE retry.ep IS NOT NULL
) GROUP BY ep ORDER BY ep

-- Each lane's unleased deliveries counted in its partial index, plus its
-- leased ones (few) from deliveries_leased.
-- name: CountPending
SELECT
	(SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_fresh WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0)
	+ (SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_leased
		WHERE d.status = 'pending' AND d.attempts = 0 AND d.lease_until > 0),
	(SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_retry WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0)
	+ (SELECT COUNT(*) FROM deliveries AS d INDEXED BY deliveries_leased
		WHERE d.status = 'pending' AND d.attempts > 0 AND d.lease_until > 0)

-- Each count reads its partial indexes (a lane's unleased entries, then
-- its leased ones; the queued deliveries') through a compound SELECT whose
-- LIMIT ends the scan at ?1 rows (TestBacklogPlan).
-- name: CountBacklog
SELECT
	(SELECT COUNT(*) FROM (
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_fresh WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0
		UNION ALL
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_leased WHERE d.status = 'pending' AND d.attempts = 0 AND d.lease_until > 0
		LIMIT ?1)),
	(SELECT COUNT(*) FROM (
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_retry WHERE d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0
		UNION ALL
		SELECT 1 FROM deliveries AS d INDEXED BY deliveries_leased WHERE d.status = 'pending' AND d.attempts > 0 AND d.lease_until > 0
		LIMIT ?1)),
	(SELECT COUNT(*) FROM (SELECT 1 FROM deliveries AS d INDEXED BY deliveries_queued WHERE d.status = 'queued' LIMIT ?1))

-- Each endpoint of ?1 is a seek into each lane's partial index of
-- unleased entries (covering), then the pending leased deliveries (few:
-- the nodes' in-memory windows; deliveries_leased holds no endpoint, so
-- each is read with its row) are matched to the endpoints; the compound
-- SELECT's LIMIT ends the walk at ?2 rows (TestPendingOfPlan).
-- name: CountPendingOf
SELECT COUNT(*) FROM (
	SELECT 1 FROM json_each(?1) AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_fresh
		WHERE d.endpoint_id = e.value AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts = 0
	UNION ALL
	SELECT 1 FROM json_each(?1) AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_retry
		WHERE d.endpoint_id = e.value AND d.status = 'pending' AND d.lease_until = 0 AND d.attempts > 0
	UNION ALL
	SELECT 1 FROM deliveries AS d INDEXED BY deliveries_leased
		WHERE d.status = 'pending' AND d.lease_until > 0 AND d.endpoint_id IN (SELECT value FROM json_each(?1))
	LIMIT ?2)
