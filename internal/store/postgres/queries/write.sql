-- The writer's statements (internal/store/engine/publish.go, record.go).
-- A rows statement's columns are arrays, read with unnest.

-- name: GuardCatalog
SELECT value FROM counters WHERE name = 'catalog' FOR SHARE

-- name: PresentSubscriptions
SELECT id FROM subscriptions WHERE id = ANY($1)

-- Seqs are drawn in input order (input), but rows are inserted in key
-- order (id, source, account_id: the unique index's): a batch that waits
-- for another's uncommitted event with the same key (another node
-- publishing it at the same time) then always waits for a larger key than
-- any it holds, so such waits never form a deadlock.
-- name: InsertEvents
WITH input AS MATERIALIZED (
	SELECT nextval('events_seq_seq') AS seq, u.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::bytea[], $8::text[], $9::text[])
		WITH ORDINALITY AS u(account_id, id, source, type, subject, published_at, payload, trace_context, schema_errors, ord)
	ORDER BY u.ord
)
INSERT INTO events (seq, account_id, id, source, type, subject, published_at, payload, trace_context, schema_errors)
OVERRIDING SYSTEM VALUE
SELECT seq, account_id, id, source, type, subject, published_at, payload, NULLIF(trace_context, ''), NULLIF(schema_errors, '')
FROM input
ORDER BY id COLLATE "C", source COLLATE "C", account_id COLLATE "C"
ON CONFLICT (id, source, account_id) DO NOTHING
RETURNING seq, account_id, id, source

-- name: EventSeqs
SELECT e.seq, e.account_id, e.id, e.source FROM events AS e
JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(account_id, id, source)
	ON e.id = k.id AND e.source = k.source AND e.account_id = k.account_id

-- name: InsertDeliveries
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status,
	round_start, next_attempt_at, created_at, lease_owner, lease_until, ordering_key)
SELECT id, account_id, subscription_id, endpoint_id, event_seq, status, at, at, at, lease_owner, lease_until,
	NULLIF(ordering_key, '')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::text[], $7::int8[], $8::text[], $9::int8[], $10::text[])
	AS n(id, account_id, subscription_id, endpoint_id, event_seq, status, at, lease_owner, lease_until, ordering_key)

-- PostgreSQL applies outcomes with ApplyCountedOutcomes, which adds the
-- rollups in the same statement (GroupCommit.CountsInApply): the engine
-- runs neither ApplyOutcomes nor AddStats here.
-- name: ApplyOutcomes
SELECT 1

-- ApplyOutcomes that adds the applied outcomes that count ($13 = 1) to
-- the rollups in the same statement (a data-modifying CTE), each
-- outcome's share given ($14 its minute, $15 … $33 what it adds to
-- delivered, failed, dead_lettered, lat0 … lat15), one upserted row per
-- (minute, subscription, endpoint), in key order (two writers adding to
-- the same rows lock them in one order).
-- name: ApplyCountedOutcomes
WITH upd AS (
	UPDATE deliveries AS d SET status = u.status, attempts = u.attempts, round_attempts = u.round_attempts,
		first_failure = u.first_failure, next_attempt_at = u.next_attempt_at,
		last_attempt_at = u.started_at, last_status_code = u.last_status_code,
		last_outcome = u.last_outcome, dead_letter_reason = u.dead_letter_reason,
		delivered_at = u.delivered_at, lease_owner = '', lease_until = 0
	FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[],
		$7::int8[], $8::int8[], $9::text[], $10::text[], $11::int8[],
		$12::text[], $13::int8[], $14::int8[], $15::int8[], $16::int8[],
		$17::int8[], $18::int8[])
		AS u(id, status, attempts, round_attempts, first_failure, next_attempt_at,
		started_at, last_status_code, last_outcome, dead_letter_reason,
		delivered_at, lease_owner, counted, minute, delivered, failed,
		dead_lettered, bucket)
	WHERE d.id = u.id AND d.status = 'pending' AND (u.lease_owner = '' OR d.lease_owner = u.lease_owner)
	RETURNING d.id, d.account_id, d.subscription_id, d.endpoint_id, d.status,
		u.counted, u.minute, u.delivered, u.failed, u.dead_lettered, u.bucket
), st AS (
	INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered, failed, dead_lettered, lat0, lat1, lat2, lat3, lat4, lat5, lat6, lat7, lat8, lat9, lat10, lat11, lat12, lat13, lat14, lat15)
	SELECT minute, account_id, subscription_id, endpoint_id, SUM(delivered), SUM(failed), SUM(dead_lettered),
		COUNT(*) FILTER (WHERE bucket = 0),
		COUNT(*) FILTER (WHERE bucket = 1),
		COUNT(*) FILTER (WHERE bucket = 2),
		COUNT(*) FILTER (WHERE bucket = 3),
		COUNT(*) FILTER (WHERE bucket = 4),
		COUNT(*) FILTER (WHERE bucket = 5),
		COUNT(*) FILTER (WHERE bucket = 6),
		COUNT(*) FILTER (WHERE bucket = 7),
		COUNT(*) FILTER (WHERE bucket = 8),
		COUNT(*) FILTER (WHERE bucket = 9),
		COUNT(*) FILTER (WHERE bucket = 10),
		COUNT(*) FILTER (WHERE bucket = 11),
		COUNT(*) FILTER (WHERE bucket = 12),
		COUNT(*) FILTER (WHERE bucket = 13),
		COUNT(*) FILTER (WHERE bucket = 14),
		COUNT(*) FILTER (WHERE bucket = 15)
	FROM upd WHERE counted = 1
	GROUP BY minute, account_id, subscription_id, endpoint_id
	ORDER BY minute, subscription_id, endpoint_id
	ON CONFLICT (minute, subscription_id, endpoint_id) DO UPDATE SET
		delivered = delivery_stats.delivered + excluded.delivered,
		failed = delivery_stats.failed + excluded.failed,
		dead_lettered = delivery_stats.dead_lettered + excluded.dead_lettered,
		lat0 = delivery_stats.lat0 + excluded.lat0,
		lat1 = delivery_stats.lat1 + excluded.lat1,
		lat2 = delivery_stats.lat2 + excluded.lat2,
		lat3 = delivery_stats.lat3 + excluded.lat3,
		lat4 = delivery_stats.lat4 + excluded.lat4,
		lat5 = delivery_stats.lat5 + excluded.lat5,
		lat6 = delivery_stats.lat6 + excluded.lat6,
		lat7 = delivery_stats.lat7 + excluded.lat7,
		lat8 = delivery_stats.lat8 + excluded.lat8,
		lat9 = delivery_stats.lat9 + excluded.lat9,
		lat10 = delivery_stats.lat10 + excluded.lat10,
		lat11 = delivery_stats.lat11 + excluded.lat11,
		lat12 = delivery_stats.lat12 + excluded.lat12,
		lat13 = delivery_stats.lat13 + excluded.lat13,
		lat14 = delivery_stats.lat14 + excluded.lat14,
		lat15 = delivery_stats.lat15 + excluded.lat15
)
SELECT id, account_id, subscription_id, endpoint_id, status FROM upd

-- name: DeleteAttemptsOf
DELETE FROM attempts WHERE delivery_id = ANY($1)

-- name: MissingDeliveries
SELECT k.id FROM unnest($1::text[]) AS k(id)
WHERE NOT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.id = k.id)

-- name: LogAttempts
INSERT INTO attempts (delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::text[], $7::text[], $8::bytea[])
ON CONFLICT (delivery_id, number) DO UPDATE SET
	started_at = excluded.started_at, duration_us = excluded.duration_us,
	status_code = excluded.status_code, outcome = excluded.outcome,
	error = excluded.error, response_body = excluded.response_body

-- name: AddStats
SELECT 1

-- name: InsertDeadLetterCopies
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at, dead_letter_of)
SELECT v.id, d.account_id, d.subscription_id, s.dead_letter_endpoint_id, d.event_seq, 'pending',
	GREATEST(v.at, e.published_at), GREATEST(v.at, e.published_at), e.published_at, d.id
FROM unnest($1::text[], $2::int8[], $3::text[]) AS v(id, at, src)
	JOIN deliveries AS d ON d.id = v.src JOIN events AS e ON e.seq = d.event_seq
	JOIN subscriptions AS s ON s.id = d.subscription_id
WHERE s.dead_letter_endpoint_id <> ''
ON CONFLICT (id) DO NOTHING

-- name: ActiveSubscriptions
SELECT id FROM subscriptions
WHERE id = ANY($1) AND state <> 'deactivated' AND delivery_mode = 'push'

-- Staged publishes (internal/store/engine/staged.go): a PostgreSQL store
-- does not stage (its large publishes have a writer of their own), so the
-- engine never runs these.

-- name: EnsureEventSeq
SELECT 1

-- name: ReserveEventSeqs
SELECT 1

-- name: InsertStagedRange
SELECT 1

-- name: DeleteStagedRange
SELECT 1

-- name: InsertEventAt
SELECT 1

-- name: SubscriptionVersion
SELECT 1

-- name: DeleteDeliveries
SELECT 1

-- name: ReleaseStaged
SELECT 1
