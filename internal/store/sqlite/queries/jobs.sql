-- Recover jobs (internal/store/engine/jobs.go).

-- A seek of deliveries_subscription_status.
-- A recover's statuses are never 'delivered' nor 'pending' (job.Recover), so
-- never leased: the literals let SQLite seek the partial index
-- deliveries_subscription_status (0021_leased_apart.sql).
-- name: CountRecover
SELECT COUNT(*) FROM (SELECT 1 FROM deliveries
WHERE subscription_id = ?1 AND status = ?2 AND status <> 'delivered' AND lease_until = 0 AND id >= ?3 AND id < ?4 LIMIT ?5)

-- name: CountRunningJobs
SELECT COUNT(*) FROM jobs WHERE account_id = ?1 AND state = 'running'

-- The one writer makes every create of a job take its turn, so SQLite
-- needs no lock: the engine runs this only on a shared store (PostgreSQL).
-- name: LockAccountJobs
SELECT ?1

-- name: InsertJob
INSERT INTO jobs (id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses, total, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)

-- name: GetJob
SELECT id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at
FROM jobs WHERE id = ?1

-- Reads and sorts every running job (jobs_running): at most
-- --max-jobs-per-account for each account.
-- name: ClaimJob
UPDATE jobs SET lease_owner = ?1, lease_until = ?3
WHERE id = (SELECT j.id FROM jobs AS j LEFT JOIN job_turns AS t ON t.account_id = j.account_id
	WHERE j.state = 'running' AND (j.lease_owner IN ('', ?1) OR j.lease_until < ?2)
	ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1)
RETURNING id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at

-- name: TakeTurn
INSERT INTO job_turns (account_id, turn) SELECT ?1, COALESCE(MAX(turn), 0) + 1 FROM job_turns WHERE true
ON CONFLICT (account_id) DO UPDATE SET turn = excluded.turn

-- name: LockJob
SELECT id, kind, account_id, subscription_id, state, since_ms, until_ms, statuses,
	total, done, errors, error, cursor_status, cursor_id, created_at, finished_at
FROM jobs WHERE id = ?1 AND state = 'running' AND lease_owner = ?2 AND lease_until >= ?3

-- A seek of deliveries_subscription_status. Each one's id, and whether the
-- restart (RestartDeliveries, redrive.sql) may move it: not the delivery of
-- a dead letter whose subscription names no dead-letter URL any more.
-- name: RecoverLook
SELECT id, dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> '')
FROM deliveries WHERE subscription_id = ?1 AND status = ?2 AND status <> 'delivered' AND lease_until = 0 AND id >= ?3 AND id > ?4 AND id < ?5
ORDER BY id LIMIT ?6

-- name: SaveJob
UPDATE jobs SET state = ?1, total = ?2, done = ?3, errors = ?4, error = ?5, cursor_status = ?6, cursor_id = ?7,
	finished_at = ?8, lease_owner = '', lease_until = 0 WHERE id = ?9

-- A seek of jobs_finished.
-- name: DeleteFinishedJobs
DELETE FROM jobs WHERE id IN (
	SELECT id FROM jobs WHERE state <> 'running' AND finished_at < ?1 ORDER BY finished_at LIMIT ?2)

-- A seek of jobs_account for each account with a turn.
-- name: ForgetTurns
DELETE FROM job_turns WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.account_id = job_turns.account_id)
