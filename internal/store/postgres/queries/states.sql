-- Subscription states: deactivation by hand and reactivation
-- (internal/store/engine/states.go). The deactivation a Record batch makes
-- is still the writer's own (states.go: deactivateBatch).

-- name: DeactivateSubscription
UPDATE subscriptions SET state = 'deactivated', state_reason = $1, updated_at = GREATEST(updated_at + 1, $2), version = $3
WHERE id = $4

-- The subscription's pending deliveries are a seek of
-- open_deliveries_subscription; each is then read by its key.
-- name: QueuePendingDeliveries
UPDATE deliveries SET status = 'queued', next_attempt_at = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $2 AND o.status = 'pending')
	AND subscription_id = $2 AND status = 'pending'

-- name: ReactivateSubscription
UPDATE subscriptions SET state = 'active', state_reason = $1, updated_at = GREATEST(updated_at + 1, $2), version = $3
WHERE id = $4

-- A seek of open_deliveries_subscription, then each delivery by its key.
-- name: UnqueueSubscriptionDeliveries
UPDATE deliveries SET status = 'pending', receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0,
	endpoint_id = CASE WHEN dead_letter_of = '' THEN $2 ELSE $3 END
WHERE id IN (SELECT o.id FROM open_deliveries AS o WHERE o.subscription_id = $4 AND o.status = 'queued')
	AND subscription_id = $4 AND status = 'queued' RETURNING endpoint_id
