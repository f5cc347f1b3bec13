-- Herald schema, version 13: why an endpoint or a subscription is in its
-- state.
--
-- state_reason is the reason of the row's last change of state, in words:
-- an endpoint's circuit transition's (health.Transition.Reason, made in
-- internal/health/reasons.go: "10 consecutive failures", "410 Gone",
-- "frozen by hand", "enabled by hand", ...), written with its health; a
-- subscription's deactivation's or activation's (subscription.Reason...:
-- "deactivated by hand", "a push failed (failure_policy queue)", ...),
-- written with its state. '' is a row whose state never changed, and every
-- row written before this version: the API shows null.
ALTER TABLE endpoints ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE subscriptions ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';
