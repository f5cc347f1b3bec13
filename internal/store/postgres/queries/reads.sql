-- Reads of deliveries, events and attempts (internal/store/engine/reads.go).

-- name: GetDelivery
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = $1

-- name: GetEvent
SELECT e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors FROM events AS e WHERE e.seq = $1

-- name: DeliveryExists
SELECT 1 FROM deliveries WHERE id = $1

-- name: AttemptSizes
SELECT octet_length(error) + coalesce(octet_length(response_body), 0) FROM attempts WHERE delivery_id = $1 AND number > $2 ORDER BY number LIMIT $3

-- name: AttemptPage
SELECT delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body FROM attempts WHERE delivery_id = $1 AND number > $2 ORDER BY number LIMIT $3

-- The pages of the delivery lists: driver.Where puts their conditions (the
-- Deliveries… statements below) at /*where*/; the limit is the last parameter.

-- name: DeliverySizes
SELECT octet_length(e.id) + octet_length(e.source)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeliveryPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeadLetterSizes
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeadLetterPage
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- …ByEvent: the same statements (the planner finds the events of an id first).

-- name: DeliverySizesByEvent
SELECT octet_length(e.id) + octet_length(e.source)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeliveryPageByEvent
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeadLetterSizesByEvent
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0)
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: DeadLetterPageByEvent
SELECT d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- Open…: a status that is not delivered, within a subscription, an account
-- or an endpoint (engine openList): the open rows (0021_open_deliveries.sql)
-- are d, which the conditions read (their columns are the deliveries'),
-- walked backward in open_deliveries_subscription (subscription_id,
-- status, id), open_deliveries_account (account_id, status, id) or
-- open_deliveries_queued_endpoint (endpoint_id, id); each delivery, x, is
-- then read by its key.

-- name: OpenDeliverySizes
SELECT octet_length(e.id) + octet_length(e.source)
FROM open_deliveries AS d JOIN deliveries AS x ON x.id = d.id JOIN events AS e ON e.seq = x.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: OpenDeliveryPage
SELECT x.id, x.account_id, x.subscription_id, x.endpoint_id, x.event_seq, e.id, e.source, x.status,
	x.attempts, x.round_attempts, x.round_start, x.first_failure, x.next_attempt_at, x.last_attempt_at,
	x.last_status_code, x.last_outcome, x.dead_letter_reason, x.created_at, x.delivered_at, x.receives,
	x.dead_letter_of, x.lock_until, COALESCE(x.ordering_key, '')
FROM open_deliveries AS d JOIN deliveries AS x ON x.id = d.id JOIN events AS e ON e.seq = x.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: OpenDeadLetterSizes
SELECT octet_length(e.id) + octet_length(e.source) + octet_length(e.type) + octet_length(e.subject) + octet_length(e.payload)
	+ coalesce(octet_length(e.schema_errors), 0)
FROM open_deliveries AS d JOIN deliveries AS x ON x.id = d.id JOIN events AS e ON e.seq = x.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- name: OpenDeadLetterPage
SELECT x.id, x.account_id, x.subscription_id, x.endpoint_id, x.event_seq, e.id, e.source, x.status,
	x.attempts, x.round_attempts, x.round_start, x.first_failure, x.next_attempt_at, x.last_attempt_at,
	x.last_status_code, x.last_outcome, x.dead_letter_reason, x.created_at, x.delivered_at, x.receives,
	x.dead_letter_of, x.lock_until, COALESCE(x.ordering_key, ''),
	e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at, e.schema_errors
FROM open_deliveries AS d JOIN deliveries AS x ON x.id = d.id JOIN events AS e ON e.seq = x.event_seq /*where*/
ORDER BY d.id DESC LIMIT $1

-- The conditions of the delivery lists (engine deliveryConds).

-- name: DeliveriesOfAccount
d.account_id = $1

-- name: DeliveriesOfAccountFiltered
d.account_id = $1

-- name: DeliveriesOfEventInAccount
d.account_id = $1 AND e.account_id = $1

-- name: DeliveriesOfSubscription
d.subscription_id = $1

-- name: DeliveriesOfEndpoint
d.endpoint_id = $1

-- The partial index open_deliveries_queued_endpoint's condition, literally.
-- name: DeliveriesQueuedOfEndpoint
d.endpoint_id = $1 AND d.status = 'queued'

-- name: DeliveriesOfEvent
e.id = $1

-- deliveries_ordering_all's condition, literally.
-- name: DeliveriesOfOrderingKey
d.ordering_key = $1 AND d.ordering_key IS NOT NULL

-- name: DeliveriesFrom
d.id >= $1

-- name: DeliveriesBefore
d.id < $1

-- name: DeliveriesOfNoStatus
false

-- Each status a literal, so that in every plan, generic ones included, the planner
-- can prove the rows to be in the partial indexes that hold it: those of queued
-- deliveries (open_deliveries_queued_endpoint). A delivered status walks the
-- subscription's or account's deliveries, filtered.

-- name: DeliveriesPending
d.status = 'pending'

-- name: DeliveriesDelivered
d.status = 'delivered'

-- name: DeliveriesDeadLettered
d.status = 'dead_lettered'

-- name: DeliveriesDropped
d.status = 'dropped'

-- name: DeliveriesQueued
d.status = 'queued'

-- name: DeliveriesFiltered
d.status = 'filtered'
