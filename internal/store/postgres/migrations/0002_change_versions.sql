-- Herald schema for PostgreSQL, version 2: versions that let every reader of subscriptions
-- and endpoint health catch up incrementally and check that what it matched
-- is current.
--
-- counters holds three numbers:
--   catalog         advanced by one in every subscription write's
--                   transaction; subscriptions.version and
--                   subscription_tombstones.version are the value that write
--                   set. A publish checks it in its own transaction.
--   catalog_pruned  the newest tombstone version deleted by clean-up: a
--                   reader older than it must read every subscription.
--   endpoints       advanced by every write of endpoint health;
--                   endpoints.version is the value that write set.
CREATE TABLE counters (
    name  text COLLATE "C" PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO counters (name, value) VALUES ('catalog', 1), ('catalog_pruned', 0), ('endpoints', 1);

ALTER TABLE subscriptions ADD COLUMN version bigint NOT NULL DEFAULT 1;
CREATE INDEX subscriptions_version ON subscriptions (version);

-- A deleted subscription, remembered until clean-up (the dedup retention) so
-- that readers learn of the deletion.
CREATE TABLE subscription_tombstones (
    id         text COLLATE "C" PRIMARY KEY,
    version    bigint NOT NULL,
    deleted_at bigint NOT NULL
);
CREATE INDEX subscription_tombstones_version ON subscription_tombstones (version);

ALTER TABLE endpoints ADD COLUMN version bigint NOT NULL DEFAULT 1;
CREATE INDEX endpoints_version ON endpoints (version);

-- A subscription write takes the catalog counter's row lock first (UPDATE),
-- and a publish batch takes it in share mode (SELECT ... FOR SHARE) before
-- it writes: the two exclude each other, so a publish sees every
-- subscription write that committed before it, and a delete never misses a
-- delivery a publish is writing. Endpoint health writes take the endpoints
-- counter the same way, so versions commit in order and an incremental
-- reader cannot skip one.

-- Earlier versions could commit a publish's delivery just after its
-- subscription's delete had dropped the others: such deliveries stayed
-- pending for ever. They end as dropped, as the delete meant.
UPDATE deliveries SET status = 'dropped', dead_letter_reason = 'SubscriptionDeleted',
    lease_owner = '', lease_until = 0
WHERE status IN ('pending', 'queued')
  AND NOT EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.id = deliveries.subscription_id);
