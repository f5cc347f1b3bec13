-- Herald schema, version 18: jobs (docs/recover.md).
--
-- A job is an operator's long-running work, worked in batches by the job
-- runner of the node holding its lease (lease_owner, lease_until; SQLite:
-- one process owns the file, and Open clears the leases of the previous
-- run). since_ms, until_ms (0: none) bound the creation times of a
-- recover's deliveries; statuses are the statuses it recovers, comma-
-- separated, in the order it works them; cursor_status (an index in
-- statuses) and cursor_id (the last delivery id looked at) are how far it
-- got, written in the transaction of each batch with the deliveries it
-- moved. jobs_running finds a job to claim.
CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    account_id      TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    state           TEXT NOT NULL,
    since_ms        INTEGER NOT NULL,
    until_ms        INTEGER NOT NULL DEFAULT 0,
    statuses        TEXT NOT NULL,
    total           INTEGER NOT NULL DEFAULT 0,
    done            INTEGER NOT NULL DEFAULT 0,
    errors          INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    cursor_status   INTEGER NOT NULL DEFAULT 0,
    cursor_id       TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    finished_at     INTEGER NOT NULL DEFAULT 0,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX jobs_running ON jobs (created_at) WHERE state = 'running';
