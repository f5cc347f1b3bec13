-- Herald schema for PostgreSQL, version 18: jobs (docs/recover.md).
--
-- A job is an operator's long-running work, worked in batches by the job
-- runner of the node holding its lease (lease_owner until lease_until: a
-- lease expires, so a job whose node stopped is taken by another).
-- since_ms, until_ms (0: none) bound the creation times of a recover's
-- deliveries; statuses are the statuses it recovers, comma-separated, in
-- the order it works them; cursor_status (an index in statuses) and
-- cursor_id (the last delivery id looked at) are how far it got, written
-- in the transaction of each batch with the deliveries it moved.
-- jobs_running finds a job to claim.
CREATE TABLE jobs (
    id              text COLLATE "C" PRIMARY KEY,
    kind            text NOT NULL,
    account_id      text NOT NULL,
    subscription_id text COLLATE "C" NOT NULL,
    state           text NOT NULL,
    since_ms        bigint NOT NULL,
    until_ms        bigint NOT NULL DEFAULT 0,
    statuses        text NOT NULL,
    total           bigint NOT NULL DEFAULT 0,
    done            bigint NOT NULL DEFAULT 0,
    errors          bigint NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    cursor_status   integer NOT NULL DEFAULT 0,
    cursor_id       text COLLATE "C" NOT NULL DEFAULT '',
    created_at      bigint NOT NULL,
    finished_at     bigint NOT NULL DEFAULT 0,
    lease_owner     text NOT NULL DEFAULT '',
    lease_until     bigint NOT NULL DEFAULT 0
);
CREATE INDEX jobs_running ON jobs (created_at) WHERE state = 'running';
