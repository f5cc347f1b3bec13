-- Reads of deliveries, events and attempts (internal/store/engine/reads.go).

-- name: GetDelivery
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ?1

-- name: GetEvent
SELECT e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors FROM events AS e WHERE e.seq = ?1

-- name: DeliveryExists
SELECT 1 FROM deliveries WHERE id = ?1

-- name: AttemptSizes
SELECT octet_length(error) + coalesce(octet_length(response_body), 0) FROM attempts WHERE delivery_id = ?1 AND number > ?2 ORDER BY number LIMIT ?3

-- name: AttemptPage
SELECT delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body FROM attempts WHERE delivery_id = ?1 AND number > ?2 ORDER BY number LIMIT ?3

-- The pages of the delivery lists: driver.Where puts their conditions (the
-- Deliveries… statements below) at /*where*/; the limit is the last parameter.

-- name: DeliverySizes
SELECT octet_length(e.id) + octet_length(e.source)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeliveryPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeadLetterSizes
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeadLetterPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- Open…: the lists of a status that is not delivered, within a subscription,
-- an account or an endpoint (engine openList). The deliveries not leased are
-- in the status indexes (or those of the queued), the leased ones (pending
-- only) in deliveries_leased (0021_leased_apart.sql): each arm reads one
-- with every condition (the marker twice), and SQLite merges the two in id
-- order, each arm read in that order (an account's leased ones, few, sorted).

-- name: OpenDeliverySizes
SELECT s FROM (
SELECT octet_length(e.id) + octet_length(e.source) AS s, d.id AS id
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until = 0
UNION ALL
SELECT octet_length(e.id) + octet_length(e.source), d.id
FROM deliveries AS d INDEXED BY deliveries_leased JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until > 0
ORDER BY id DESC LIMIT ?1) ORDER BY id DESC

-- name: OpenDeliveryPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until = 0
UNION ALL
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d INDEXED BY deliveries_leased JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until > 0
ORDER BY 1 DESC LIMIT ?1

-- name: OpenDeadLetterSizes
SELECT s FROM (
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0) AS s, d.id AS id
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until = 0
UNION ALL
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0), d.id
FROM deliveries AS d INDEXED BY deliveries_leased JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until > 0
ORDER BY id DESC LIMIT ?1) ORDER BY id DESC

-- name: OpenDeadLetterPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until = 0
UNION ALL
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM deliveries AS d INDEXED BY deliveries_leased JOIN events AS e ON e.seq = d.event_seq /*where*/ AND d.lease_until > 0
ORDER BY 1 DESC LIMIT ?1

-- …ByEvent: the conditions name an event id (e.id), and the events with that id,
-- then their few deliveries, is always the cheapest way, which the planner cannot
-- know without statistics: CROSS JOIN fixes the order.

-- name: DeliverySizesByEvent
SELECT octet_length(e.id) + octet_length(e.source)
FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeliveryPageByEvent
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeadLetterSizesByEvent
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0)
FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- name: DeadLetterPageByEvent
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq /*where*/
ORDER BY d.id DESC LIMIT ?1

-- The conditions of the delivery lists (engine deliveryConds).

-- name: DeliveriesOfAccount
d.account_id = ?1

-- The account as a filter on the rows of a subscription's or an endpoint's index:
-- the unary + keeps the planner off the account's wider index.
-- name: DeliveriesOfAccountFiltered
+d.account_id = ?1

-- name: DeliveriesOfEventInAccount
e.account_id = ?1

-- name: DeliveriesOfSubscription
d.subscription_id = ?1

-- name: DeliveriesOfEndpoint
d.endpoint_id = ?1

-- The partial index deliveries_queued_endpoint's condition, literally.
-- name: DeliveriesQueuedOfEndpoint
d.endpoint_id = ?1 AND d.status = 'queued'

-- name: DeliveriesOfEvent
e.id = ?1

-- deliveries_ordering_all's condition, literally.
-- name: DeliveriesOfOrderingKey
d.ordering_key = ?1 AND d.ordering_key IS NOT NULL

-- name: DeliveriesFrom
d.id >= ?1

-- name: DeliveriesBefore
d.id < ?1

-- name: DeliveriesOfNoStatus
0

-- Each status a literal: SQLite uses a partial index only when a query's terms
-- hold its condition, which it cannot see through a parameter. Every status but
-- delivered is in the status indexes (schema 10), whose condition the second
-- term repeats.

-- name: DeliveriesPending
d.status = 'pending' AND d.status <> 'delivered'

-- name: DeliveriesDelivered
d.status = 'delivered'

-- name: DeliveriesDeadLettered
d.status = 'dead_lettered' AND d.status <> 'delivered'

-- name: DeliveriesDropped
d.status = 'dropped' AND d.status <> 'delivered'

-- name: DeliveriesQueued
d.status = 'queued' AND d.status <> 'delivered'

-- name: DeliveriesFiltered
d.status = 'filtered' AND d.status <> 'delivered'
