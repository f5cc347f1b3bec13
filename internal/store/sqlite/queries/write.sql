-- The writer's statements (internal/store/engine/publish.go, record.go,
-- staged.go). A rows statement's marked row (/*rows*/) is repeated for up
-- to 32 rows a run (writeconn.go); it holds plain parameters only.

-- name: GuardCatalog
SELECT value FROM counters WHERE name = 'catalog'

-- name: PresentSubscriptions
SELECT id FROM subscriptions WHERE id IN (SELECT value FROM json_each(?1))

-- In the order of the VALUES (AUTOINCREMENT: each seq larger than any
-- events ever had). WHERE true: SQLite's upsert after a SELECT needs it.
-- name: InsertEvents
WITH v(account_id, id, source, type, subject, published_at, payload, trace_context, schema_errors) AS (
	VALUES /*rows*/ (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))
INSERT INTO events (account_id, id, source, type, subject, published_at, payload, trace_context, schema_errors)
SELECT account_id, id, source, type, subject, published_at, payload, NULLIF(trace_context, ''), NULLIF(schema_errors, '')
FROM v WHERE true
ON CONFLICT (id, source, account_id) DO NOTHING
RETURNING seq, account_id, id, source

-- name: EventSeqs
WITH k(account_id, id, source) AS (VALUES /*rows*/ (?1, ?2, ?3))
SELECT e.seq, e.account_id, e.id, e.source FROM k
JOIN events AS e ON e.id = k.id AND e.source = k.source AND e.account_id = k.account_id

-- name: InsertDeliveries
WITH v(id, account_id, subscription_id, endpoint_id, event_seq, status, at, lease_owner, lease_until, ordering_key) AS (
	VALUES /*rows*/ (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10))
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status,
	round_start, next_attempt_at, created_at, lease_owner, lease_until, ordering_key)
SELECT id, account_id, subscription_id, endpoint_id, event_seq, status, at, at, at, lease_owner, lease_until,
	NULLIF(ordering_key, '') FROM v

-- Each delivery by primary key (u drives the join: its rows are few).
-- name: ApplyOutcomes
WITH u(id, status, attempts, round_attempts, first_failure, next_attempt_at, started_at,
	last_status_code, last_outcome, dead_letter_reason, delivered_at, lease_owner) AS (
	VALUES /*rows*/ (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))
UPDATE deliveries AS d SET status = u.status, attempts = u.attempts, round_attempts = u.round_attempts,
	first_failure = u.first_failure, next_attempt_at = u.next_attempt_at,
	last_attempt_at = u.started_at, last_status_code = u.last_status_code,
	last_outcome = u.last_outcome, dead_letter_reason = u.dead_letter_reason,
	delivered_at = u.delivered_at, lease_owner = '', lease_until = 0
FROM u WHERE d.id = u.id AND d.status = 'pending' AND (u.lease_owner = '' OR d.lease_owner = u.lease_owner)
RETURNING id, account_id, subscription_id, endpoint_id, status

-- SQLite has no data-modifying CTE: the engine adds the rollups itself
-- (AddStats), logs attempts only once it knows which deliveries exist, and
-- never runs these two (GroupCommit.CountsInApply is false).
-- name: ApplyCountedOutcomes
SELECT 1

-- name: DeleteAttemptsOf
SELECT 1

-- name: MissingDeliveries
SELECT value FROM json_each(?1) WHERE NOT EXISTS (SELECT 1 FROM deliveries WHERE id = json_each.value)

-- name: LogAttempts
INSERT INTO attempts (delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
VALUES /*rows*/ (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (delivery_id, number) DO UPDATE SET
	started_at = excluded.started_at, duration_us = excluded.duration_us,
	status_code = excluded.status_code, outcome = excluded.outcome,
	error = excluded.error, response_body = excluded.response_body

-- name: AddStats
INSERT INTO delivery_stats (minute, account_id, subscription_id, endpoint_id, delivered, failed,
	dead_lettered, lat0, lat1, lat2, lat3, lat4, lat5, lat6, lat7, lat8, lat9,
	lat10, lat11, lat12, lat13, lat14, lat15)
VALUES /*rows*/ (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)
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

-- name: InsertDeadLetterCopies
WITH v(id, at, src) AS (VALUES /*rows*/ (?1, ?2, ?3))
INSERT INTO deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at, dead_letter_of)
SELECT v.id, d.account_id, d.subscription_id, s.dead_letter_endpoint_id, d.event_seq, 'pending',
	MAX(v.at, e.published_at), MAX(v.at, e.published_at), e.published_at, d.id
FROM v JOIN deliveries AS d ON d.id = v.src JOIN events AS e ON e.seq = d.event_seq
	JOIN subscriptions AS s ON s.id = d.subscription_id
WHERE s.dead_letter_endpoint_id <> ''
ON CONFLICT (id) DO NOTHING

-- name: ActiveSubscriptions
SELECT id FROM subscriptions
WHERE id IN (SELECT value FROM json_each(?1)) AND state <> 'deactivated' AND delivery_mode = 'push'

-- Staged publishes (internal/store/engine/staged.go).

-- name: EnsureEventSeq
INSERT INTO sqlite_sequence (name, seq)
SELECT 'events', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')

-- name: ReserveEventSeqs
UPDATE sqlite_sequence SET seq = seq + ?1 WHERE name = 'events' RETURNING seq

-- name: InsertStagedRange
INSERT INTO counters (name, value) VALUES (?1, ?2)

-- name: DeleteStagedRange
DELETE FROM counters WHERE name = ?1

-- name: InsertEventAt
INSERT INTO events (seq, account_id, id, source, type, subject, published_at, payload, trace_context, schema_errors)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULLIF(?9, ''), NULLIF(?10, '')) ON CONFLICT (id, source, account_id) DO NOTHING

-- name: SubscriptionVersion
SELECT version FROM subscriptions WHERE id = ?1

-- name: DeleteDeliveries
DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?1))

-- name: ReleaseStaged
UPDATE deliveries SET lease_until = 0
WHERE id IN (SELECT value FROM json_each(?1)) AND lease_owner = '' AND lease_until = ?2
