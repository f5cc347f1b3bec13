-- Subscriptions, the catalog version and the endpoint rows of subscriptions
-- (internal/store/engine/subscriptions.go, catalog.go,
-- subscriptions_endpoints.go).
--
-- The statements that change a subscription's deliveries repeat
-- `status <> 'delivered' AND lease_until = 0` literally: SQLite uses the
-- partial index deliveries_subscription_status (0010_status_indexes.sql,
-- 0021_leased_apart.sql) only for a query that names its condition. Its
-- leased deliveries (pending ones) are those of deliveries_leased.

-- The one writer serialises every write: the catalog needs no lock here,
-- only a read.
-- name: LockCatalog
SELECT value FROM counters WHERE name = 'catalog'

-- name: BumpCatalog
UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value

-- A SQLite store is not shared: the engine never runs it.
-- name: NotifyCatalog
SELECT 1

-- A SQLite store is not shared: the engine never runs it.
-- name: NotifyQueued
SELECT count(*) FROM json_each(?1)

-- name: CatalogVersion
SELECT value FROM counters WHERE name = 'catalog'

-- name: CatalogPruned
SELECT value FROM counters WHERE name = 'catalog_pruned'

-- In version order, from subscriptions_version: in ID order, SQLite read
-- the whole table to skip a sort, which made every catalog sync (one after
-- each subscription write) cost all the subscriptions.
-- name: ChangedSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE version > ?1 AND version <= ?2 ORDER BY version

-- name: DeletedSubscriptions
SELECT id FROM subscription_tombstones WHERE version > ?1 AND version <= ?2 ORDER BY version

-- name: InsertSubscription
INSERT INTO subscriptions (id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)
ON CONFLICT DO NOTHING

-- name: UpdateSubscription
UPDATE subscriptions SET
	name = ?3, url = ?4, endpoint_id = ?5, event_types = ?6, subject_begins_with = ?7, subject_ends_with = ?8,
	retry_policy = ?9, timeout_ms = ?10, headers = ?11, secret_headers = ?12, signing = ?13, dead_letter = ?14,
	state = CASE WHEN ?15 IS NULL THEN state ELSE state END,
	delivery_mode = ?16, failure_policy = ?17, delivery = ?18, dead_letter_endpoint_id = ?19, filters = ?20,
	created_at = ?21, updated_at = ?22, version = ?23
WHERE id = ?1 AND account_id = ?2

-- name: DeleteSubscription
DELETE FROM subscriptions WHERE id = ?1

-- name: RememberDeletedSubscription
INSERT INTO subscription_tombstones (id, version, deleted_at) VALUES (?1, ?2, ?3)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, deleted_at = excluded.deleted_at

-- name: GetSubscription
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE id = ?1

-- name: SubscriptionByName
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE account_id = ?1 AND name = ?2

-- name: SubscriptionNamed
SELECT id FROM subscriptions WHERE account_id = ?1 AND name = ?2

-- name: SubscriptionExists
SELECT 1 FROM subscriptions WHERE id = ?1

-- name: SubscriptionState
SELECT account_id, delivery_mode, state, endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = ?1

-- A seek of subscriptions_account.
-- name: CountSubscriptions
SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions WHERE account_id = ?1 LIMIT ?2)

-- name: MoveSubscriptionDeliveries
UPDATE deliveries SET endpoint_id = ?1
WHERE id IN (
	SELECT id FROM deliveries WHERE subscription_id = ?2 AND status IN ('pending', 'queued') AND status <> 'delivered' AND lease_until = 0
	UNION ALL
	SELECT id FROM deliveries INDEXED BY deliveries_leased WHERE status = 'pending' AND subscription_id = ?2 AND lease_until > 0) AND dead_letter_of = ''

-- name: MoveSubscriptionDeadLetters
UPDATE deliveries SET endpoint_id = ?1
WHERE id IN (
	SELECT id FROM deliveries WHERE subscription_id = ?2 AND status IN ('pending', 'queued') AND status <> 'delivered' AND lease_until = 0
	UNION ALL
	SELECT id FROM deliveries INDEXED BY deliveries_leased WHERE status = 'pending' AND subscription_id = ?2 AND lease_until > 0) AND dead_letter_of <> ''

-- name: DropSubscriptionDeadLetters
UPDATE deliveries SET status = 'dropped', dead_letter_reason = ?1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (
	SELECT id FROM deliveries WHERE subscription_id = ?2 AND status IN ('pending', 'queued') AND status <> 'delivered' AND lease_until = 0
	UNION ALL
	SELECT id FROM deliveries INDEXED BY deliveries_leased WHERE status = 'pending' AND subscription_id = ?2 AND lease_until > 0) AND dead_letter_of <> ''

-- name: DropSubscriptionDeliveries
UPDATE deliveries SET status = 'dropped', dead_letter_reason = ?1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (
	SELECT id FROM deliveries WHERE subscription_id = ?2 AND status IN ('pending', 'queued') AND status <> 'delivered' AND lease_until = 0
	UNION ALL
	SELECT id FROM deliveries INDEXED BY deliveries_leased WHERE status = 'pending' AND subscription_id = ?2 AND lease_until > 0)

-- name: ListSubscriptionSizes
SELECT octet_length(name) + octet_length(url) + octet_length(event_types) +
	octet_length(subject_begins_with) + octet_length(subject_ends_with) +
	coalesce(octet_length(retry_policy), 0) + octet_length(headers) + octet_length(secret_headers)
FROM subscriptions WHERE id > ?1 ORDER BY id LIMIT ?2

-- name: ListSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE id > ?1 ORDER BY id LIMIT ?2

-- A seek of subscriptions_account.
-- name: ListAccountSubscriptionSizes
SELECT octet_length(name) + octet_length(url) + octet_length(event_types) +
	octet_length(subject_begins_with) + octet_length(subject_ends_with) +
	coalesce(octet_length(retry_policy), 0) + octet_length(headers) + octet_length(secret_headers)
FROM subscriptions WHERE account_id = ?2 AND id > ?1 ORDER BY id LIMIT ?3

-- A seek of subscriptions_account.
-- name: ListAccountSubscriptions
SELECT id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version, state_reason
FROM subscriptions WHERE account_id = ?2 AND id > ?1 ORDER BY id LIMIT ?3

-- The endpoint rows of subscriptions (engine/subscriptions_endpoints.go).

-- name: EndpointExists
SELECT 1 FROM endpoints WHERE id = ?1

-- name: InsertEndpoint
INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES (?1, ?2, ?3, ?4, ?5)

-- name: DeleteUnusedEndpoint
DELETE FROM endpoints WHERE id = ?1
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE endpoint_id = ?1)
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE dead_letter_endpoint_id = ?1)
