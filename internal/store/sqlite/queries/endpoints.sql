-- Endpoints and their health (internal/store/engine/endpoints.go). Every
-- statement that returns endpoints selects the columns sqlrow.ScanEndpoint
-- reads.

-- name: GetEndpoint
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE id = ?1

-- name: AllEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints ORDER BY id

-- A seek of endpoints_account (account_id = ?1 AND id > ?2), the state
-- (?3, '' for any) a filter on that walk.
-- name: ListEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE account_id = ?1 AND id > ?2 AND state = coalesce(nullif(?3, ''), state)
ORDER BY id LIMIT ?4

-- name: ListEndpointSizes
SELECT octet_length(url) + octet_length(health_window)
FROM endpoints WHERE account_id = ?1 AND id > ?2 AND state = coalesce(nullif(?3, ''), state)
ORDER BY id LIMIT ?4

-- A walk of the primary key (id > ?2); ?1 is ''.
-- name: ListAllEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE ?1 = '' AND id > ?2 AND state = coalesce(nullif(?3, ''), state)
ORDER BY id LIMIT ?4

-- name: ListAllEndpointSizes
SELECT octet_length(url) + octet_length(health_window)
FROM endpoints WHERE ?1 = '' AND id > ?2 AND state = coalesce(nullif(?3, ''), state)
ORDER BY id LIMIT ?4

-- name: EndpointsVersion
SELECT value FROM counters WHERE name = 'endpoints'

-- A range of endpoints_version.
-- name: ChangedEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE version > ?1 ORDER BY id

-- name: BumpEndpoints
UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value

-- A plain read: the one writer, which runs every write transaction,
-- serialises this read-modify-write with every other write (PostgreSQL
-- locks the rows instead).
-- name: LockEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id

-- Each element of ?2 finds its endpoint by primary key.
-- name: SaveHealth
UPDATE endpoints SET
	state = u.value ->> 'state', consecutive_failures = u.value ->> 'consecutive_failures',
	health_window = u.value ->> 'health_window', first_attempt_at = u.value ->> 'first_attempt_at',
	last_success_at = u.value ->> 'last_success_at', last_failure_at = u.value ->> 'last_failure_at',
	disabled_at = u.value ->> 'disabled_at', frozen_at = u.value ->> 'frozen_at',
	next_probe_at = u.value ->> 'next_probe_at', probation_delay_ms = u.value ->> 'probation_delay_ms',
	updated_at = u.value ->> 'updated_at', version = ?1, state_reason = u.value ->> 'state_reason',
	rate_per_second = u.value ->> 'rate_per_second', rate_burst = u.value ->> 'rate_burst'
FROM json_each(?2) AS u
WHERE endpoints.id = u.value ->> 'id'
RETURNING id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst

-- name: TakeProbe
UPDATE endpoints SET next_probe_at = ?3
WHERE id = ?1 AND next_probe_at <> 0 AND next_probe_at <= ?2
