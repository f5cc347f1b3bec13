-- Claims and leases of the due loader, and the counts of the backlog
-- (internal/store/engine/claims.go, claims_keys.go).
--
-- The lanes are partial indexes of open_deliveries (0021_open_deliveries.sql:
-- a row for each delivery not delivered, kept by triggers), and each
-- condition on o repeats the WHERE clause of its index so that the planner
-- can use it:
--   fresh  o.status = 'pending' AND o.attempts = 0   (open_deliveries_fresh)
--   retry  o.status = 'pending' AND o.attempts > 0   (open_deliveries_retry)
-- The claim reads each candidate's deliveries row d by its key and locks
-- it; the conditions on d repeat those on o, so that the re-check after a
-- lock (a row another transaction changed meanwhile) judges the row as it
-- is now. A delivery is available when it holds no lease or its lease
-- expired before now (leases expire by time here). Leased deliveries stay
-- in the lanes (so that leasing and releasing change no open row) and are
-- skipped by a filter on d.lease_until: there are few of them, the nodes'
-- in-memory windows.
--
-- keyHead, written out in ClaimDue, ClaimKeyRecheck and NextDue (now is
-- $2): d is unordered, or its key's head: no pending delivery of its
-- subscription and key has an earlier event (one sequence for every node;
-- open_deliveries_ordering: one seek), and no other one holds a lease
-- still running at now (open_deliveries_ordering_leased: one seek; the open
-- rows of keyed deliveries copy lease_until). A claim's
-- snapshot that still sees the previous head pending leaves the next one
-- for a later claim, never two; the key locks and re-check close the
-- window of what a claim's snapshot cannot see (engine/claims_keys.go).

-- Each lane's candidates in due order, locked with FOR UPDATE SKIP LOCKED
-- so that concurrent claimers (any node) skip each other's rows instead of
-- waiting or sharing them. The CTEs are evaluated lazily under the LIMIT
-- of pick: the retry lane is read (and its rows locked) only for what the
-- fresh lane leaves of the limit. A row whose lease another claimer took
-- in the meantime fails the re-check of the WHERE clause after locking and
-- is left out. UPDATE … RETURNING returns the rows in no order.
-- name: ClaimDue
WITH fresh AS (
	SELECT d.id FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
	WHERE o.endpoint_id = $1 AND o.status = 'pending' AND o.attempts = 0 AND o.next_attempt_at <= $2 AND (o.lease_until = 0 OR o.lease_until < $2)
		AND d.endpoint_id = $1 AND d.status = 'pending' AND d.attempts = 0 AND d.next_attempt_at <= $2 AND (d.lease_until = 0 OR d.lease_until < $2)
		AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM open_deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM open_deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))
	ORDER BY o.next_attempt_at, o.id
	LIMIT $3
	FOR UPDATE OF d SKIP LOCKED
), retry AS (
	SELECT d.id FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
	WHERE o.endpoint_id = $1 AND o.status = 'pending' AND o.attempts > 0 AND o.next_attempt_at <= $2 AND (o.lease_until = 0 OR o.lease_until < $2)
		AND d.endpoint_id = $1 AND d.status = 'pending' AND d.attempts > 0 AND d.next_attempt_at <= $2 AND (d.lease_until = 0 OR d.lease_until < $2)
		AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM open_deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM open_deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))
	ORDER BY o.next_attempt_at, o.id
	LIMIT $3
	FOR UPDATE OF d SKIP LOCKED
), pick AS (
	(SELECT id FROM fresh) UNION ALL (SELECT id FROM retry) LIMIT $3
)
UPDATE deliveries AS d SET lease_owner = $4, lease_until = $5
FROM pick, events AS e
WHERE d.id = pick.id AND e.seq = d.event_seq
RETURNING d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''), e.payload, COALESCE(e.trace_context, '')

-- Not run here: the store is shared, and ClaimDue leases what it claims in
-- its own statement. It would lease the deliveries $3.
-- name: LeaseClaimed
UPDATE deliveries SET lease_owner = $1, lease_until = $2 WHERE id = ANY($3)

-- Transaction-level advisory locks, tried without waiting: a key's lock is
-- the pair (hashtext(subscription), hashtext(key)), in the two-int4
-- advisory key space (migrateLockSQL uses the bigint one).
-- name: ClaimKeyLocks
SELECT u.id FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, sub, key)
WHERE NOT pg_try_advisory_xact_lock(hashtext(u.sub), hashtext(u.key))

-- name: ClaimKeyRecheck
UPDATE deliveries AS d SET lease_owner = '', lease_until = 0
WHERE d.id = ANY($1) AND NOT (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM open_deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM open_deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))
RETURNING d.id

-- name: ClaimDeadLetters
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ANY($1)

-- A HOT update (no index changes).
-- name: ReleaseLeases
UPDATE deliveries SET lease_owner = '', lease_until = 0
WHERE id = ANY($1) AND lease_owner = $2 AND lease_until <> 0

-- name: ExtendLeases
UPDATE deliveries SET lease_until = $3
WHERE id = ANY($1) AND status = 'pending' AND lease_owner = $2 AND lease_until <> 0
RETURNING id

-- name: NextDue
SELECT LEAST(
	(SELECT o.next_attempt_at FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
		WHERE o.endpoint_id = $1 AND o.status = 'pending' AND o.attempts = 0 AND (o.lease_until = 0 OR o.lease_until < $2) AND (d.lease_until = 0 OR d.lease_until < $2) AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM open_deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM open_deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))
		ORDER BY o.next_attempt_at LIMIT 1),
	(SELECT o.next_attempt_at FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
		WHERE o.endpoint_id = $1 AND o.status = 'pending' AND o.attempts > 0 AND (o.lease_until = 0 OR o.lease_until < $2) AND (d.lease_until = 0 OR d.lease_until < $2) AND (d.ordering_key IS NULL OR (
	NOT EXISTS (SELECT 1 FROM open_deliveries AS h
		WHERE h.subscription_id = d.subscription_id AND h.ordering_key = d.ordering_key
			AND h.status = 'pending' AND h.ordering_key IS NOT NULL AND h.event_seq < d.event_seq)
	AND NOT EXISTS (SELECT 1 FROM open_deliveries AS l
		WHERE l.subscription_id = d.subscription_id AND l.ordering_key = d.ordering_key
			AND l.status = 'pending' AND l.ordering_key IS NOT NULL AND l.lease_until > 0
			AND l.lease_until >= $2 AND l.id <> d.id)))
		ORDER BY o.next_attempt_at LIMIT 1))

-- The skip scan is a recursive CTE; each endpoint's earliest available
-- entry is then found as in NextDue (without keyHead).
-- name: DueEndpoints
WITH RECURSIVE
fresh(ep) AS (
	SELECT (SELECT MIN(o.endpoint_id) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts = 0)
	UNION ALL
	SELECT (SELECT MIN(o.endpoint_id) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts = 0 AND o.endpoint_id > fresh.ep)
	FROM fresh WHERE fresh.ep IS NOT NULL
),
retry(ep) AS (
	SELECT (SELECT MIN(o.endpoint_id) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts > 0)
	UNION ALL
	SELECT (SELECT MIN(o.endpoint_id) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts > 0 AND o.endpoint_id > retry.ep)
	FROM retry WHERE retry.ep IS NOT NULL
),
eps(ep) AS (
	SELECT ep FROM fresh WHERE ep IS NOT NULL
	UNION
	SELECT ep FROM retry WHERE ep IS NOT NULL
)
SELECT ep, at FROM (
	SELECT eps.ep, LEAST(
		(SELECT o.next_attempt_at FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
			WHERE o.endpoint_id = eps.ep AND o.status = 'pending' AND o.attempts = 0 AND (o.lease_until = 0 OR o.lease_until < $1) AND (d.lease_until = 0 OR d.lease_until < $1)
			ORDER BY o.next_attempt_at LIMIT 1),
		(SELECT o.next_attempt_at FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
			WHERE o.endpoint_id = eps.ep AND o.status = 'pending' AND o.attempts > 0 AND (o.lease_until = 0 OR o.lease_until < $1) AND (d.lease_until = 0 OR d.lease_until < $1)
			ORDER BY o.next_attempt_at LIMIT 1)) AS at
	FROM eps
) AS x WHERE at IS NOT NULL ORDER BY ep

-- Counts each lane's partial index (leased or not).
-- name: CountPending
SELECT
	(SELECT COUNT(*) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts = 0),
	(SELECT COUNT(*) FROM open_deliveries AS o WHERE o.status = 'pending' AND o.attempts > 0)

-- Each count reads its rows in its index's order, so that in the
-- transaction the driver's SeekReader begins (indexSeeksOnly) the one plan
-- left is that index's scan, which stops after $1 entries
-- (TestBacklogPlans).
-- name: CountBacklog
SELECT
	(SELECT COUNT(*) FROM (SELECT FROM open_deliveries AS d WHERE d.status = 'pending' AND d.attempts = 0
		ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT $1) AS f),
	(SELECT COUNT(*) FROM (SELECT FROM open_deliveries AS d WHERE d.status = 'pending' AND d.attempts > 0
		ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT $1) AS r),
	(SELECT COUNT(*) FROM (SELECT FROM open_deliveries AS d WHERE d.status = 'queued'
		ORDER BY d.subscription_id, d.next_attempt_at, d.id LIMIT $1) AS q)

-- Each endpoint of $1 is a seek into each lane's partial index (its
-- entries lead with endpoint_id), leased deliveries included; the LIMIT
-- ends the walk at $2 entries in all. Under the SeekReader's settings
-- (indexSeeksOnly) every read is such an index scan (TestPendingOfPlans).
-- name: CountPendingOf
SELECT COUNT(*) FROM (
	SELECT FROM unnest($1::text[]) AS e(id) CROSS JOIN LATERAL (
		SELECT FROM open_deliveries AS o WHERE o.endpoint_id = e.id AND o.status = 'pending' AND o.attempts = 0
		UNION ALL
		SELECT FROM open_deliveries AS o WHERE o.endpoint_id = e.id AND o.status = 'pending' AND o.attempts > 0
	) AS d
	LIMIT $2) AS c
