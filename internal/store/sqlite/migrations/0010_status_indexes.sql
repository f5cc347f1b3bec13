-- Herald schema, version 10: the status indexes leave delivered deliveries out.
--
-- deliveries_subscription_status and deliveries_account_status had an entry
-- for every delivery, so every delivery that succeeded deleted its entry in
-- each and inserted another: about a sixth of the writer's CPU per delivery
-- (docs/benchmarks.md, "Issue 14"). They now hold the deliveries that are
-- not delivered: pending, queued, dead-lettered and dropped ones, the lists
-- an operator asks for by status. A list of the delivered deliveries of a
-- subscription (or an account) walks deliveries_subscription
-- (deliveries_account) newest first and skips the others, which in the
-- usual case are few.
--
-- SQLite uses a partial index only for a query whose WHERE clause holds
-- the index's condition as one of its terms, so every query meant for these
-- indexes repeats `status <> 'delivered'` literally (queries.go,
-- record.go, admin.go, subscriptions.go).
DROP INDEX deliveries_subscription_status;
DROP INDEX deliveries_account_status;
CREATE INDEX deliveries_subscription_status ON deliveries (subscription_id, status, id)
    WHERE status <> 'delivered';
CREATE INDEX deliveries_account_status ON deliveries (account_id, status, id)
    WHERE status <> 'delivered';
