-- Subscriptions, the catalog version and the endpoint rows of subscriptions
-- (internal/store/engine/subscriptions.go, catalog.go,
-- subscriptions_endpoints.go).
--
-- The statements that change a subscription's deliveries seek the
-- subscription's open rows (open_deliveries_subscription,
-- 0021_open_deliveries.sql), then each delivery by its key, its conditions
-- repeated: the re-check after a lock judges the row as it is now.

-- The catalog row's lock, until the transaction ends: every subscription
-- write takes it first. A publish batch reads the row FOR SHARE, so the two
-- exclude each other, on every node; a Record batch that may deactivate
-- takes it FOR UPDATE.
-- name: LockCatalog
SELECT value FROM counters WHERE name = 'catalog' FOR UPDATE

-- name: BumpCatalog
UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value

-- Sent when the transaction commits; the payload names the schema (every
-- connection of the store's pool has the one read at open), so deployments
-- in different schemas of one database ignore each other's (changes.go).
-- name: NotifyCatalog
SELECT pg_notify('herald_changes', current_schema() || ' catalog')

-- One notification per subscription, sent when the transaction commits.
-- name: NotifyQueued
SELECT pg_notify('herald_queued', current_schema() || ' ' || id) FROM unnest($1::text[]) AS id

-- name: CatalogVersion
SELECT value FROM counters WHERE name = 'catalog'

-- name: CatalogPruned
SELECT value FROM counters WHERE name = 'catalog_pruned'

-- Bounded on both sides, the range is estimated small whatever the
-- statistics say, so the planner reads it from the version index. With the
-- lower bound alone, and statistics older than the latest writes, it read
-- the whole table, which made every catalog sync (one after each
-- subscription write) cost all the subscriptions.
-- name: ChangedSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE version > $1 AND version <= $2 ORDER BY id

-- name: DeletedSubscriptions
SELECT id FROM subscription_tombstones WHERE version > $1 AND version <= $2 ORDER BY id

-- name: InsertSubscription
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
ON CONFLICT DO NOTHING

-- $15 (the state) is typed so that it may be taken and ignored.
-- name: UpdateSubscription
UPDATE subscriptions SET
	name = $3, url = $4, endpoint_id = $5, event_types = $6, subject_begins_with = $7, subject_ends_with = $8,
	retry_policy = $9, timeout_ms = $10, headers = $11, secret_headers = $12, signing = $13, dead_letter = $14,
	state = CASE WHEN $15::text IS NULL THEN state ELSE state END,
	delivery_mode = $16, failure_policy = $17, delivery = $18, dead_letter_endpoint_id = $19, filters = $20,
	created_at = $21, updated_at = $22, version = $23
WHERE id = $1 AND account_id = $2

-- name: DeleteSubscription
DELETE FROM subscriptions WHERE id = $1

-- name: RememberDeletedSubscription
INSERT INTO subscription_tombstones (id, version, deleted_at) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, deleted_at = excluded.deleted_at

-- name: GetSubscription
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE id = $1

-- name: SubscriptionByName
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE account_id = $1 AND name = $2

-- name: SubscriptionNamed
SELECT id FROM subscriptions WHERE account_id = $1 AND name = $2

-- FOR SHARE: a subscription write that would delete it waits until this
-- transaction ends (a redelivery to it, a create checking its ID is free).
-- name: SubscriptionExists
SELECT 1 FROM subscriptions WHERE id = $1 FOR SHARE

-- name: SubscriptionState
SELECT account_id, delivery_mode, state, endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = $1

-- Reads at most $2 entries of the index on (account_id, id).
-- name: CountSubscriptions
SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions WHERE account_id = $1 LIMIT $2) AS s

-- FOR KEY SHARE: the account cannot be deleted until the transaction ends.
-- name: MoveSubscriptionDeliveries
UPDATE deliveries SET endpoint_id = $1
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $2 AND o.status IN ('pending', 'queued'))
	AND subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of = ''

-- name: MoveSubscriptionDeadLetters
UPDATE deliveries SET endpoint_id = $1
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $2 AND o.status IN ('pending', 'queued'))
	AND subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of <> ''

-- name: DropSubscriptionDeadLetters
UPDATE deliveries SET status = 'dropped', dead_letter_reason = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $2 AND o.status IN ('pending', 'queued'))
	AND subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of <> ''

-- name: DropSubscriptionDeliveries
UPDATE deliveries SET status = 'dropped', dead_letter_reason = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $2 AND o.status IN ('pending', 'queued'))
	AND subscription_id = $2 AND status IN ('pending', 'queued')

-- name: ListSubscriptionSizes
SELECT octet_length(name) + octet_length(url) + octet_length(event_types) +
	octet_length(subject_begins_with) + octet_length(subject_ends_with) +
	coalesce(octet_length(retry_policy), 0) + octet_length(headers) + octet_length(secret_headers)
FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2

-- name: ListSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2

-- A seek of the index on (account_id, id).
-- name: ListAccountSubscriptionSizes
SELECT octet_length(name) + octet_length(url) + octet_length(event_types) +
	octet_length(subject_begins_with) + octet_length(subject_ends_with) +
	coalesce(octet_length(retry_policy), 0) + octet_length(headers) + octet_length(secret_headers)
FROM subscriptions WHERE id > $1 AND account_id = $2 ORDER BY id LIMIT $3

-- A seek of the index on (account_id, id).
-- name: ListAccountSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE id > $1 AND account_id = $2 ORDER BY id LIMIT $3

-- The endpoint rows of subscriptions (engine/subscriptions_endpoints.go).

-- name: EndpointExists
SELECT 1 FROM endpoints WHERE id = $1

-- name: InsertEndpoint
INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES ($1, $2, $3, $4, $5)

-- name: DeleteUnusedEndpoint
DELETE FROM endpoints WHERE id = $1
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE endpoint_id = $1)
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE dead_letter_endpoint_id = $1)
