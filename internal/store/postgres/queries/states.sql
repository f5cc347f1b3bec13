-- Subscription states: deactivation by hand and reactivation
-- (internal/store/engine/states.go). The deactivation a Record batch makes
-- is still the writer's own (states.go: deactivateBatch).

-- name: DeactivateSubscription
UPDATE subscriptions SET state = 'deactivated', state_reason = $1, updated_at = GREATEST(updated_at + 1, $2), version = $3
WHERE id = $4

-- The status is a literal: the subscription's entries of the partial index
-- deliveries_subscription_status.
-- name: QueuePendingDeliveries
UPDATE deliveries SET status = 'queued', next_attempt_at = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = $2 AND status = 'pending'

-- name: ReactivateSubscription
UPDATE subscriptions SET state = 'active', state_reason = $1, updated_at = GREATEST(updated_at + 1, $2), version = $3
WHERE id = $4

-- A seek of the partial index deliveries_queued.
-- name: UnqueueSubscriptionDeliveries
UPDATE deliveries SET status = 'pending', receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0,
	endpoint_id = CASE WHEN dead_letter_of = '' THEN $2 ELSE $3 END
WHERE subscription_id = $4 AND status = 'queued' RETURNING endpoint_id
