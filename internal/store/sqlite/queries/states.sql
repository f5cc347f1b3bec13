-- Subscription states: deactivation by hand and reactivation
-- (internal/store/engine/states.go). The deactivation a Record outcome
-- makes is still the writer's own (states.go: deactivate).

-- name: DeactivateSubscription
UPDATE subscriptions SET state = 'deactivated', state_reason = ?1, updated_at = MAX(updated_at + 1, ?2), version = ?3
WHERE id = ?4

-- The subscription's pending deliveries, leased ones included: those not
-- leased a seek of deliveries_subscription_status, the leased ones of
-- deliveries_leased (0021_leased_apart.sql).
-- name: QueuePendingDeliveries
UPDATE deliveries SET status = 'queued', next_attempt_at = ?1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE id IN (
	SELECT id FROM deliveries WHERE subscription_id = ?2 AND status = 'pending' AND status <> 'delivered' AND lease_until = 0
	UNION ALL
	SELECT id FROM deliveries INDEXED BY deliveries_leased WHERE status = 'pending' AND subscription_id = ?2 AND lease_until > 0)

-- name: ReactivateSubscription
UPDATE subscriptions SET state = 'active', state_reason = ?1, updated_at = MAX(updated_at + 1, ?2), version = ?3
WHERE id = ?4

-- name: UnqueueSubscriptionDeliveries
UPDATE deliveries SET status = 'pending', receives = 0, round_attempts = 0, round_start = ?1, first_failure = 0,
	next_attempt_at = ?1, lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0,
	endpoint_id = CASE WHEN dead_letter_of = '' THEN ?2 ELSE ?3 END
WHERE subscription_id = ?4 AND status = 'queued' RETURNING endpoint_id
