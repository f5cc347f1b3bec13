-- Herald schema for PostgreSQL, version 16 (numbered 0018 in the issue:
-- the lead renumbers at merge): ordering keys (docs/ordering.md).
--
-- ordering_key is the CloudEvents partitionkey of a delivery of a
-- subscription with "ordering": "key" (at most 256 bytes), NULL for every
-- other delivery and every delivery written before this version. Among the
-- unfinished (pending: due, leased or waiting for a retry) deliveries of a
-- (subscription, key), only the one with the smallest id, its key's head,
-- may be claimed, and only while no other one of the key holds a live
-- lease (claim.go). Both checks are index seeks on the partial indexes
-- below, which hold only keyed deliveries: deliveries_ordering (pending
-- ones) finds a key's head as its first entry and a live lease of the key
-- by lease_until; deliveries_ordering_all lists a key's deliveries. A
-- claim of a keyed delivery changes lease_until, an indexed column of
-- deliveries_ordering, so it is not a HOT update: the price of the lease
-- check, paid by keyed deliveries only.
ALTER TABLE deliveries ADD COLUMN ordering_key text COLLATE "C";
CREATE INDEX deliveries_ordering ON deliveries (subscription_id, ordering_key, id)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_leased ON deliveries (subscription_id, ordering_key, lease_until)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_all ON deliveries (subscription_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL;
