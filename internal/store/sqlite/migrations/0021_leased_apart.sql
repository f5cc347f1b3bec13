-- Herald schema, version 21: a leased delivery is in no status index
-- (issue 36, docs/architecture.md#the-sqlite-deliveries-in-flight).
--
-- A delivery pushed at once (the fast path: leased to this process when it
-- is published) was written into deliveries_leased and both status
-- indexes (deliveries_subscription_status, deliveries_account_status:
-- those not delivered), and its outcome, delivered, deleted the three
-- entries again: three index writes in the publish and three in the
-- outcome, beside the row, for a delivery that is pending for a few
-- milliseconds.
--
-- Since this version a leased delivery (lease_until > 0, which only a
-- pending one is: every statement that ends a pending state clears the
-- lease, and this one clears any left) is in deliveries_leased only, and
-- the status indexes hold the deliveries not delivered and not leased. A
-- delivery on the fast path so costs one index entry in the publish and
-- deletes one in the outcome; one claimed later moves from its lane and
-- both status indexes to deliveries_leased when claimed and back when
-- released, as many index writes as before in all.
--
-- deliveries_leased leads with status (always 'pending' there), so that a
-- list or a count of another status finds nothing in one seek; then the
-- subscription and the id, for the pending deliveries of a subscription
-- in list order, and attempts, which makes the lanes' counts of leased
-- deliveries read only the index. The statements that read a status index
-- for pending deliveries read deliveries_leased too (the queries name
-- both; a list merges the two in id order).
UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE lease_until > 0 AND status <> 'pending';
DROP INDEX deliveries_subscription_status;
DROP INDEX deliveries_account_status;
DROP INDEX deliveries_leased;
CREATE INDEX deliveries_subscription_status ON deliveries (subscription_id, status, id)
    WHERE status <> 'delivered' AND lease_until = 0;
CREATE INDEX deliveries_account_status ON deliveries (account_id, status, id)
    WHERE status <> 'delivered' AND lease_until = 0;
CREATE INDEX deliveries_leased ON deliveries (status, subscription_id, id, attempts, lease_until)
    WHERE lease_until > 0;
