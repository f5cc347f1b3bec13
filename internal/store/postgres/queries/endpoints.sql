-- Endpoints and their health (internal/store/engine/endpoints.go). Every
-- statement that returns endpoints selects the columns sqlrow.ScanEndpoint
-- reads.

-- name: GetEndpoint
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE id = $1

-- name: AllEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints ORDER BY id

-- A seek of endpoints_account (account_id = $1 AND id > $2), the state ($3,
-- '' for any) a filter on that walk, in a generic plan too.
-- name: ListEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE account_id = $1 AND id > $2 AND state = coalesce(nullif($3, ''), state)
ORDER BY id LIMIT $4

-- name: ListEndpointSizes
SELECT octet_length(url) + octet_length(health_window)
FROM endpoints WHERE account_id = $1 AND id > $2 AND state = coalesce(nullif($3, ''), state)
ORDER BY id LIMIT $4

-- A walk of the primary key (id > $2); $1 is ''.
-- name: ListAllEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE $1 = '' AND id > $2 AND state = coalesce(nullif($3, ''), state)
ORDER BY id LIMIT $4

-- name: ListAllEndpointSizes
SELECT octet_length(url) + octet_length(health_window)
FROM endpoints WHERE $1 = '' AND id > $2 AND state = coalesce(nullif($3, ''), state)
ORDER BY id LIMIT $4

-- name: EndpointsVersion
SELECT value FROM counters WHERE name = 'endpoints'

-- A range of endpoints_version.
-- name: ChangedEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE version > $1 ORDER BY id

-- Locks the counter's row until the transaction ends (versions commit in
-- order), and tells the other nodes that endpoints changed: pg_notify on
-- changes.go's changeChannel with the payload "<schema> endpoints", sent
-- when (and only if) the transaction commits.
-- name: BumpEndpoints
UPDATE counters SET value = value + 1
FROM pg_notify('herald_changes', current_schema() || ' endpoints')
WHERE name = 'endpoints'
RETURNING value

-- FOR UPDATE in ID order: concurrent callers lock overlapping sets in the
-- same order and never deadlock; another node's ModifyEndpoints or
-- TakeProbe waits until this transaction ends.
-- name: LockEndpoints
SELECT id, account_id, url, state, consecutive_failures, health_window, first_attempt_at, last_success_at,
	last_failure_at, disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at, updated_at, version, state_reason,
	rate_per_second, rate_burst
FROM endpoints WHERE id = ANY($1) ORDER BY id FOR UPDATE

-- Each element of $2 finds its endpoint by primary key.
-- name: SaveHealth
UPDATE endpoints AS e SET
	state = u.state, consecutive_failures = u.consecutive_failures, health_window = u.health_window,
	first_attempt_at = u.first_attempt_at, last_success_at = u.last_success_at,
	last_failure_at = u.last_failure_at, disabled_at = u.disabled_at, frozen_at = u.frozen_at,
	next_probe_at = u.next_probe_at, probation_delay_ms = u.probation_delay_ms, updated_at = u.updated_at,
	version = $1, state_reason = u.state_reason, rate_per_second = u.rate_per_second, rate_burst = u.rate_burst
FROM jsonb_to_recordset($2::jsonb) AS u(id text, state text, consecutive_failures int8, health_window text,
	first_attempt_at int8, last_success_at int8, last_failure_at int8, disabled_at int8, frozen_at int8,
	next_probe_at int8, probation_delay_ms int8, updated_at int8, state_reason text, rate_per_second float8, rate_burst int4)
WHERE e.id = u.id
RETURNING e.id, e.account_id, e.url, e.state, e.consecutive_failures, e.health_window, e.first_attempt_at, e.last_success_at,
	e.last_failure_at, e.disabled_at, e.frozen_at, e.next_probe_at, e.probation_delay_ms, e.created_at, e.updated_at,
	e.version, e.state_reason, e.rate_per_second, e.rate_burst

-- A concurrent caller waits for the row and re-checks the condition on the
-- updated version, so only one of them changes it.
-- name: TakeProbe
UPDATE endpoints SET next_probe_at = $3
WHERE id = $1 AND next_probe_at <> 0 AND next_probe_at <= $2
