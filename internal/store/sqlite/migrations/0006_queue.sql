-- Herald schema, version 6: pull subscriptions and queued deliveries.
--
-- delivery_mode is 'push' (deliveries are POSTed to url) or 'pull' (url ''
-- and endpoint_id '': no endpoint row; consumers receive the deliveries);
-- failure_policy is 'retry' or 'queue' (a failed push is queued and the
-- subscription deactivated). Every subscription stored before is a push
-- subscription that retries.
--
-- A queued delivery is receivable when next_attempt_at <= now. Receiving it
-- locks it: receives goes up by one, lock_token is the token the consumer
-- settles it with (store.LockToken), and lock_until and next_attempt_at
-- both become the lock's end, so that an expired lock makes the delivery
-- receivable again with no other write. A settled lock is cleared
-- (lock_token '', lock_until 0); locks are rows, so they survive restarts.
--
-- deliveries_queued serves receiving (a seek on subscription_id and
-- next_attempt_at <= now, in next_attempt_at order), the earliest
-- next_attempt_at of a subscription's queue and the count of queued
-- deliveries; deliveries_queued_endpoint the queued deliveries of an
-- endpoint (a URL), newest first. Both are partial: deliveries never queued
-- (the usual push traffic) cost them nothing. As with the indexes of
-- version 1, the queries in queue.go, queries.go and subscriptions.go repeat
-- the condition status = 'queued' literally, or SQLite would not use them.
ALTER TABLE subscriptions ADD COLUMN delivery_mode TEXT NOT NULL DEFAULT 'push';
ALTER TABLE subscriptions ADD COLUMN failure_policy TEXT NOT NULL DEFAULT 'retry';

ALTER TABLE deliveries ADD COLUMN receives INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN lock_token TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN lock_until INTEGER NOT NULL DEFAULT 0;

CREATE INDEX deliveries_queued ON deliveries (subscription_id, next_attempt_at)
    WHERE status = 'queued';
CREATE INDEX deliveries_queued_endpoint ON deliveries (endpoint_id, id)
    WHERE status = 'queued';
