-- Herald schema, version 16 (numbered 0018 in the issue: the lead
-- renumbers at merge): ordering keys (docs/ordering.md).
--
-- ordering_key is the CloudEvents partitionkey of a delivery of a
-- subscription with "ordering": "key" (at most 256 bytes), NULL for every
-- other delivery and every delivery written before this version. Among the
-- unfinished (pending: due, leased or waiting for a retry) deliveries of a
-- (subscription, key), only the one with the smallest id, its key's head,
-- may be claimed, and only while no other one of the key holds a lease
-- (claim.go). Both checks are index seeks on the partial indexes below,
-- which hold only keyed pending deliveries: deliveries_ordering finds a
-- key's head (its first entry) and, with a status other than pending,
-- lists a key's deliveries through deliveries_ordering_all;
-- deliveries_ordering_leased finds a leased one of the key (SQLite leases
-- never expire: lease_until > 0). Queries repeat the conditions literally
-- (SQLite uses a partial index only then).
ALTER TABLE deliveries ADD COLUMN ordering_key TEXT;
CREATE INDEX deliveries_ordering ON deliveries (subscription_id, ordering_key, id)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_leased ON deliveries (subscription_id, ordering_key)
    WHERE lease_until > 0 AND ordering_key IS NOT NULL;
CREATE INDEX deliveries_ordering_all ON deliveries (subscription_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL;
