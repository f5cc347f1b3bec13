-- Recover jobs (internal/store/engine/jobs.go).

-- A seek of open_deliveries_subscription (a delivered status, which the
-- literal condition leaves out, has no rows there).
-- name: CountRecover
SELECT COUNT(*) FROM (SELECT 1 FROM open_deliveries
WHERE subscription_id = $1 AND status = $2 AND status <> 'delivered' AND id >= $3 AND id < $4 LIMIT $5) AS c

-- name: CountRunningJobs
SELECT COUNT(*) FROM jobs WHERE account_id = $1 AND state = 'running'

-- Makes the creates of an account's jobs (the count, then the insert) take
-- turns across nodes: a transaction-level advisory lock of the schema's
-- account, in the bigint key space (as the migrations' lock; two accounts
-- whose hashes are equal share a lock, which at worst makes one create
-- wait for the other's).
-- name: LockAccountJobs
SELECT pg_advisory_xact_lock(hashtextextended('herald.jobs:' || current_schema() || ':' || $1::text, 0))

-- name: InsertJob
INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses, total, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: GetJob
SELECT id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at
FROM jobs WHERE id = $1

-- Reads and sorts every running job (jobs_running): at most
-- --max-jobs-per-account for each account. SKIP LOCKED lets nodes claim
-- side by side.
-- name: ClaimJob
UPDATE jobs SET lease_owner = $1, lease_until = $3
WHERE id = (SELECT j.id FROM jobs AS j LEFT JOIN job_turns AS t ON t.account_id = j.account_id
	WHERE j.state = 'running' AND (j.lease_owner IN ('', $1) OR j.lease_until < $2)
	ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED)
RETURNING id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at

-- Two nodes claiming at once may give the same turn, which only leaves the
-- order of those two to the next claim.
-- name: TakeTurn
INSERT INTO job_turns (account_id, turn) SELECT $1::text, COALESCE(MAX(turn), 0) + 1 FROM job_turns WHERE true
ON CONFLICT (account_id) DO UPDATE SET turn = excluded.turn

-- Locked: a node whose lease ended cannot write a batch beside the one
-- that took the job over.
-- name: LockJob
SELECT id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at
FROM jobs WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND lease_until >= $3 FOR UPDATE

-- A seek of open_deliveries_subscription, each delivery then read by its
-- key and locked (its conditions repeated: the re-check after a lock judges
-- the row as it is now). Each one's id, and whether the restart
-- (RestartDeliveries, redrive.sql) may move it: not the delivery of a dead
-- letter whose subscription names no dead-letter URL any more.
-- name: RecoverLook
SELECT d.id, d.dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = d.subscription_id AND s.dead_letter_endpoint_id <> '')
FROM open_deliveries AS o JOIN deliveries AS d ON d.id = o.id
WHERE o.subscription_id = $1 AND o.status = $2 AND o.status <> 'delivered'
	AND o.id >= $3 AND o.id > $4 AND o.id < $5 AND d.subscription_id = $1 AND d.status = $2
ORDER BY o.id LIMIT $6 FOR UPDATE OF d

-- name: SaveJob
UPDATE jobs SET state = $1, total = $2, done = $3, errors = $4, error = $5, cursor_status = $6, cursor_id = $7,
	finished_at = $8, lease_owner = '', lease_until = 0 WHERE id = $9

-- A seek of jobs_finished.
-- name: DeleteFinishedJobs
DELETE FROM jobs WHERE id = ANY(ARRAY(
	SELECT id FROM jobs WHERE state <> 'running' AND finished_at < $1 ORDER BY finished_at LIMIT $2))

-- A seek of jobs_account for each account with a turn.
-- name: ForgetTurns
DELETE FROM job_turns AS t WHERE NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.account_id = t.account_id)
