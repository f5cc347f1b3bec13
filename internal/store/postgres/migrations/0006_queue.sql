-- Herald schema for PostgreSQL, version 6: pull subscriptions, the queue
-- failure policy and the locks consumers hold on queued deliveries.
--
-- delivery_mode is 'push' (POSTed to the URL) or 'pull' (no URL, no
-- endpoint row: endpoint_id is '' and its deliveries are written queued);
-- failure_policy is 'retry' or 'queue' (a failed push queues the delivery
-- and deactivates the subscription: state 'deactivated').
--
-- A queued delivery is receivable when next_attempt_at <= now. Receiving it
-- counts it in receives and locks it: lock_token is the consumer's token,
-- and lock_until and next_attempt_at both move to the lock's end, so an
-- expired lock makes it receivable again with no other write. Settling the
-- lock clears lock_token and lock_until.
--
-- The new columns have constant DEFAULTs: adding them rewrites no table.
ALTER TABLE subscriptions ADD COLUMN delivery_mode text NOT NULL DEFAULT 'push',
    ADD COLUMN failure_policy text NOT NULL DEFAULT 'retry';
ALTER TABLE deliveries ADD COLUMN receives bigint NOT NULL DEFAULT 0,
    ADD COLUMN lock_token text NOT NULL DEFAULT '',
    ADD COLUMN lock_until bigint NOT NULL DEFAULT 0;

-- Both indexes hold queued deliveries only, and index no column that the
-- indexes of 0001 do not already (status, subscription_id, endpoint_id,
-- next_attempt_at, id), never the lease or lock columns: claiming and
-- releasing a pending delivery still changes no indexed column and stays a
-- HOT update (see 0001), and a pending delivery costs them nothing.
-- queue.go and queries.go repeat their WHERE clause literally.
--
-- deliveries_queued: a subscription's queued deliveries in due order (id
-- last: a stable order among equal times, which a deactivation makes
-- common), for Receive (the receivable ones), its NextAt and CountQueued.
CREATE INDEX deliveries_queued ON deliveries (subscription_id, next_attempt_at, id)
    WHERE status = 'queued';
-- deliveries_queued_endpoint: the queued deliveries of one URL (endpoint),
-- newest first (ListDeliveries with an endpoint).
CREATE INDEX deliveries_queued_endpoint ON deliveries (endpoint_id, id)
    WHERE status = 'queued';
