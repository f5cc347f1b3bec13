-- Herald schema for PostgreSQL, version 10: the indexes of deliveries by
-- status hold the deliveries not delivered only.
--
-- Recording a delivery's outcome changes its status, so the UPDATE is not
-- HOT (an indexed column changes) and every index of deliveries gets an
-- entry for the new row version, the indexes with status in them included.
-- Nearly every delivery ends delivered, and a list of a subscription's or
-- an account's delivered deliveries, the one list that read those entries,
-- is served as well by the indexes without status: deliveries_subscription
-- (subscription_id, id) and deliveries_account (account_id, id), read
-- newest first with a filter on status, most of whose rows are delivered.
-- So both indexes with status become partial, WHERE status <> 'delivered',
-- with the same columns and names: a delivery that ends delivered adds
-- nothing to them, and the lists of the other statuses (pending, queued,
-- dead-lettered, dropped: the rare ones) still seek them.
--
-- A partial index serves a query only when the planner proves that the
-- query's conditions imply its predicate, and it cannot with a status given
-- as a parameter in a generic plan: the queries name the status as a
-- literal (queries.go: statusRows), as the queries of the lane and queue
-- indexes do.
--
-- Creating them reads deliveries once each; the old ones go in the same
-- transaction (a writer waits for it).
DROP INDEX deliveries_subscription_status;
CREATE INDEX deliveries_subscription_status ON deliveries (subscription_id, status, id)
    WHERE status <> 'delivered';
DROP INDEX deliveries_account_status;
CREATE INDEX deliveries_account_status ON deliveries (account_id, status, id)
    WHERE status <> 'delivered';
