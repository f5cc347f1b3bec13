-- Redelivery and redrive (internal/store/engine/redrive.go).
--
-- Redeliver, RedriveAll, RedriveIDs, RedriveAccountIDs (and RecoverMove in
-- jobs.sql) make the same change, restart: a fresh attempt budget, pending,
-- or queued (for consumers, receives counted afresh) when the subscription
-- is a pull subscription or a deactivated push one, which push nothing.
-- Attempts (the lifetime count) and the last_* fields stay: the delivery
-- keeps its history, and with attempts > 0 it is due in the retry lane.
-- dead_letter_reason and delivered_at are cleared. It goes to its
-- subscription's endpoint: the one it was made for, or, if the subscription
-- has moved to another URL since, that URL's; the delivery of a dead letter
-- to its subscription's dead-letter URL's (the redrives leave out those
-- whose subscription names none any more). A consumer's lock on a queued
-- delivery is cleared: its token settles nothing any more.

-- name: RedeliveryState
SELECT status, lease_until, subscription_id, dead_letter_of FROM deliveries WHERE id = $1 FOR UPDATE

-- name: SubscriptionDeadLetterEndpoint
SELECT dead_letter_endpoint_id FROM subscriptions WHERE id = $1

-- name: Redeliver
UPDATE deliveries SET status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
WHERE id = $2

-- Seeks the subscription's dead letters in the partial index
-- deliveries_subscription_status (its status is a literal).
-- name: RedriveAll
UPDATE deliveries SET status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
WHERE subscription_id = $2 AND status = 'dead_lettered'
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))
RETURNING id, endpoint_id, status, subscription_id

-- name: RedriveIDs
UPDATE deliveries SET status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
WHERE id = ANY($3) AND subscription_id = $2 AND status = 'dead_lettered'
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))
RETURNING id, endpoint_id, status, subscription_id

-- The account's dead letters among the ids ($3) whose subscription exists,
-- locked in share mode as SubscriptionExists locks one: a delete waits, and
-- a subscription deleted meanwhile is left out with its dead letters, which
-- have nowhere to go.
-- name: RedriveAccountIDs
WITH subs AS (
	SELECT s.id FROM subscriptions AS s WHERE s.id IN (SELECT d.subscription_id FROM deliveries AS d
		WHERE d.id = ANY($3) AND d.account_id = $2 AND d.status = 'dead_lettered') FOR SHARE
)
UPDATE deliveries SET status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)
WHERE id = ANY($3) AND account_id = $2 AND status = 'dead_lettered'
AND subscription_id IN (SELECT id FROM subs)
AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))
RETURNING id, endpoint_id, status, subscription_id
