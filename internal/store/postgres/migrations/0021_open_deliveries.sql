-- Herald schema for PostgreSQL, version 21: the per-delivery write is a HOT
-- update (issue 36, docs/architecture.md#the-postgresql-deliveries-and-their-open-rows).
--
-- Recording an outcome changes a delivery's status, attempts and next
-- attempt. Up to version 20 eight partial indexes of deliveries named those
-- columns (the claim lanes, the ordering keys' heads and leases, the queued
-- deliveries, the lists by status), so no outcome was a HOT update: each
-- wrote a new row version on another page (with a lock record) and an
-- entry in each of the four indexes on unchanging columns.
--
-- Those eight indexes move to open_deliveries, a narrow table with one row
-- for each delivery that is not delivered (pending, queued, dead-lettered,
-- dropped): the columns the indexes read, copied from the delivery. The
-- deliveries row keeps every column and stays the one the statements read
-- and write; its indexes are left on columns no statement changes (id,
-- account, subscription, event, ordering key), so every UPDATE of a
-- delivery changes no indexed column and is HOT when its page has room:
-- hence a fillfactor of 50 (new pages keep half free, room for one new
-- version of each row, since a batch's outcomes update most rows of a page
-- in one transaction, before any old version can be pruned).
--
-- Statement-level triggers with transition tables keep open_deliveries the
-- image of deliveries, in the statement's own transaction, whatever
-- statement writes deliveries: an insert adds the rows of those not
-- delivered; an update whose row changed one of the copied columns
-- replaces its row (a delivered one has none); a delete removes them. A
-- delivery delivered on its first attempt so costs a narrow insert and a
-- delete (which writes no index) instead of four index entries and a row
-- version off its page. lease_until is copied too, so that the loader's
-- walk of a lane (ClaimDue, NextDue, DueEndpoints) skips the deliveries
-- leased to a node on the narrow row, without reading each delivery's:
-- under a backlog a lane's head holds hundreds of leased deliveries, and
-- reading each one's row made the walk cost twice what it did at version
-- 20 (docs/benchmarks.md, "Issue 36: the lease renewal"). Claiming,
-- extending and releasing a lease so replace the delivery's open row; a
-- node renews only leases near their end, so extending is rare.
--
-- A row is found by (subscription_id, status, id), the key of
-- open_deliveries_subscription, which every row is in: no index of its own.
-- The functions that find them plan without sequential scans (their SET
-- clauses): the transition tables are small and open_deliveries may be
-- large, which a plan made on a small one (a sequential scan) would not
-- survive.
-- The statements that used the old indexes read these (the dialect's
-- queries name them); their conditions repeat each partial index's.
CREATE TABLE open_deliveries (
    id              text COLLATE "C" NOT NULL,
    account_id      text COLLATE "C" NOT NULL,
    subscription_id text COLLATE "C" NOT NULL,
    endpoint_id     text COLLATE "C" NOT NULL,
    event_seq       bigint NOT NULL,
    status          text NOT NULL,
    attempts        integer NOT NULL,
    next_attempt_at bigint NOT NULL,
    ordering_key    text COLLATE "C",
    lease_until     bigint NOT NULL
);

INSERT INTO open_deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts,
    next_attempt_at, ordering_key, lease_until)
SELECT id, account_id, subscription_id, endpoint_id, event_seq, status, attempts, next_attempt_at, ordering_key,
    lease_until
FROM deliveries WHERE status <> 'delivered';

DROP INDEX deliveries_fresh, deliveries_retry, deliveries_queued, deliveries_queued_endpoint,
    deliveries_ordering, deliveries_ordering_leased, deliveries_subscription_status, deliveries_account_status;

CREATE INDEX open_deliveries_fresh ON open_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND attempts = 0;
CREATE INDEX open_deliveries_retry ON open_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND attempts > 0;
CREATE INDEX open_deliveries_queued ON open_deliveries (subscription_id, next_attempt_at, id)
    WHERE status = 'queued';
CREATE INDEX open_deliveries_queued_endpoint ON open_deliveries (endpoint_id, id)
    WHERE status = 'queued';
CREATE INDEX open_deliveries_ordering ON open_deliveries (subscription_id, ordering_key, event_seq)
    WHERE status = 'pending' AND ordering_key IS NOT NULL;
CREATE INDEX open_deliveries_ordering_leased ON open_deliveries (subscription_id, ordering_key, lease_until)
    WHERE status = 'pending' AND ordering_key IS NOT NULL AND lease_until > 0;
CREATE INDEX open_deliveries_subscription ON open_deliveries (subscription_id, status, id);
CREATE INDEX open_deliveries_account ON open_deliveries (account_id, status, id);

ALTER TABLE deliveries SET (fillfactor = 50);

CREATE FUNCTION open_deliveries_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO open_deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts,
        next_attempt_at, ordering_key, lease_until)
    SELECT n.id, n.account_id, n.subscription_id, n.endpoint_id, n.event_seq, n.status, n.attempts,
        n.next_attempt_at, n.ordering_key, n.lease_until
    FROM new_rows AS n WHERE n.status <> 'delivered';
    RETURN NULL;
END $$;

CREATE FUNCTION open_deliveries_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off AS $$
BEGIN
    WITH changed AS (
        SELECT o.subscription_id AS old_subscription_id, o.status AS old_status, n.*
        FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
        WHERE (o.status, o.attempts, o.next_attempt_at, o.endpoint_id, o.subscription_id, o.account_id, o.lease_until)
            IS DISTINCT FROM (n.status, n.attempts, n.next_attempt_at, n.endpoint_id, n.subscription_id, n.account_id,
                n.lease_until)
    ), gone AS (
        DELETE FROM open_deliveries AS x USING changed AS c
        WHERE x.subscription_id = c.old_subscription_id AND x.status = c.old_status AND x.id = c.id
    )
    INSERT INTO open_deliveries (id, account_id, subscription_id, endpoint_id, event_seq, status, attempts,
        next_attempt_at, ordering_key, lease_until)
    SELECT c.id, c.account_id, c.subscription_id, c.endpoint_id, c.event_seq, c.status, c.attempts,
        c.next_attempt_at, c.ordering_key, c.lease_until
    FROM changed AS c WHERE c.status <> 'delivered';
    RETURN NULL;
END $$;

CREATE FUNCTION open_deliveries_deleted() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM open_deliveries AS x USING old_rows AS o
    WHERE x.subscription_id = o.subscription_id AND x.status = o.status AND x.id = o.id;
    RETURN NULL;
END $$;

CREATE TRIGGER open_deliveries_inserted AFTER INSERT ON deliveries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION open_deliveries_inserted();
CREATE TRIGGER open_deliveries_updated AFTER UPDATE ON deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION open_deliveries_updated();
CREATE TRIGGER open_deliveries_deleted AFTER DELETE ON deliveries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION open_deliveries_deleted();
