-- Herald schema for PostgreSQL, version 17: ordering keys (docs/ordering.md).
--
-- ordering_key is the CloudEvents partitionkey of a delivery of a
-- subscription with "ordering": "key" (at most 256 bytes), NULL for every
-- other delivery and every delivery written before this version. Among the
-- unfinished (pending: due, leased or waiting for a retry) deliveries of a
-- (subscription, key), only the one of the earliest event (the smallest
-- event_seq: publish order), its key's head,
-- may be claimed, and only while no other one of the key holds a live
-- lease (claim.go). Both checks are index seeks on partial indexes of
-- keyed pending deliveries: deliveries_ordering finds a key's head as its
-- first entry; deliveries_ordering_leased (the leased ones, lease_until > 0,
-- which the query repeats: a generic plan cannot infer it from
-- lease_until >= now) finds a live lease in the key by lease_until. Its
-- condition keeps the head check on deliveries_ordering (the planner
-- would otherwise take either, and sort). deliveries_ordering_all (every
-- keyed delivery) lists a subscription's deliveries of one key, newest
-- first. A claim of a keyed delivery puts it in deliveries_ordering_leased,
-- so it is not a HOT update: the price of the lease check, paid by keyed
-- deliveries only.
ALTER TABLE deliveries ADD COLUMN ordering_key text COLLATE "C";
CREATE INDEX deliveries_ordering ON deliveries (subscription_id, ordering_key, event_seq)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_leased ON deliveries (subscription_id, ordering_key, lease_until)
    WHERE status = 'pending' AND ordering_key IS NOT NULL AND lease_until > 0;
CREATE INDEX deliveries_ordering_all ON deliveries (subscription_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL;
