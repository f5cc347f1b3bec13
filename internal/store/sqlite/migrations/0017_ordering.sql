-- Herald schema, version 17: ordering keys (docs/ordering.md).
--
-- ordering_key is the CloudEvents partitionkey of a delivery of a
-- subscription with "ordering": "key" (at most 256 bytes), NULL for every
-- other delivery and every delivery written before this version. Among the
-- unfinished (pending: due, leased or waiting for a retry) deliveries of a
-- (subscription, key), only the one of the earliest event (the smallest
-- event_seq: publish order), its key's head,
-- may be claimed, and only while no other one of the key holds a lease
-- (claim.go). Both checks are index seeks on partial indexes of keyed
-- deliveries: deliveries_ordering (the pending ones) finds a key's head as
-- its first entry; deliveries_ordering_leased (the leased ones: SQLite
-- leases never expire, lease_until > 0; the column makes it covering for
-- that condition, which SQLite does not infer from an index's WHERE) finds
-- a lease held in the key. deliveries_ordering_all (every keyed delivery)
-- lists a subscription's deliveries of one key, newest first. Queries
-- repeat the conditions literally (SQLite uses a partial index only then).
ALTER TABLE deliveries ADD COLUMN ordering_key TEXT;
CREATE INDEX deliveries_ordering ON deliveries (subscription_id, ordering_key, event_seq)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_leased ON deliveries (subscription_id, ordering_key, lease_until)
    WHERE lease_until > 0 AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_all ON deliveries (subscription_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL;
