-- Redelivery and redrive (internal/store/engine/redrive.go).

-- name: RedeliveryState
SELECT status, lease_until, subscription_id, dead_letter_of FROM deliveries WHERE id = ?1

-- name: SubscriptionDeadLetterEndpoint
SELECT dead_letter_endpoint_id FROM subscriptions WHERE id = ?1

-- The restart of the deliveries ?2 at ?1, the one change of Redeliver, the
-- redrives and the recover jobs (jobs.sql), whose looks choose the ids: a
-- fresh attempt budget, pending, or queued (for consumers, receives counted
-- afresh) when the subscription is a pull subscription or a deactivated
-- push one, which push nothing. Attempts (the lifetime count) and the
-- last_* fields stay: the delivery keeps its history, and with attempts > 0
-- it is due in the retry lane. dead_letter_reason and delivered_at are
-- cleared. It goes to its subscription's endpoint: the one it was made for,
-- or, if the subscription has moved to another URL since, that URL's; the
-- delivery of a dead letter to its subscription's dead-letter URL's (the
-- looks leave out those whose subscription names none any more). A
-- consumer's lock on a queued delivery is cleared: its token settles
-- nothing any more. Each id by the primary key.
-- name: RestartDeliveries
UPDATE deliveries SET status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = ?1, first_failure = 0,
	next_attempt_at = ?1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
WHERE id IN (SELECT value FROM json_each(?2))
RETURNING id, endpoint_id, status, subscription_id

-- The looks of the redrives: dead letters, but the deliveries of dead
-- letters whose subscription names no dead-letter URL any more.

-- A seek of deliveries_subscription_status (a dead letter is never leased).
-- name: RedriveAllLook
SELECT id FROM deliveries WHERE subscription_id = ?1 AND status = 'dead_lettered' AND status <> 'delivered' AND lease_until = 0
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))

-- name: RedriveIDsLook
SELECT id FROM deliveries WHERE id IN (SELECT value FROM json_each(?2)) AND subscription_id = ?1 AND status = 'dead_lettered'
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))

-- Each id by the primary key (the unary + keeps deliveries_account out of
-- the plan); a deleted subscription's dead letters stay dead-lettered, with
-- nowhere to go.
-- name: RedriveAccountIDsLook
SELECT id FROM deliveries WHERE id IN (SELECT value FROM json_each(?2)) AND +account_id = ?1 AND status = 'dead_lettered'
AND EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))
