-- Herald schema, version 1.
--
-- Times are integer Unix milliseconds, 0 meaning "unset". Lists and maps are
-- JSON text. A delivery is unleased when lease_until = 0; the due loader's two
-- partial indexes hold only pending, unleased deliveries, split by lane
-- (attempts = 0 is fresh, attempts > 0 is retry), so claiming and finding the
-- next due time are index seeks however large the retry backlog grows.
--
-- The partial-index conditions are matched literally by the queries in
-- claim.go (SQLite only uses a partial index when the query's WHERE clause
-- repeats its condition with the same constants): change both together.

-- An endpoint's circuit health (internal/health) is kept in the columns
-- after url; health_window is the rolling window's non-empty slices as JSON
-- [[slice, attempts, failures], ...].
CREATE TABLE endpoints (
    id                   TEXT PRIMARY KEY,
    url                  TEXT NOT NULL,
    state                TEXT NOT NULL DEFAULT 'enabled',
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    health_window        TEXT NOT NULL DEFAULT '[]',
    first_attempt_at     INTEGER NOT NULL DEFAULT 0,
    last_success_at      INTEGER NOT NULL DEFAULT 0,
    last_failure_at      INTEGER NOT NULL DEFAULT 0,
    disabled_at          INTEGER NOT NULL DEFAULT 0,
    frozen_at            INTEGER NOT NULL DEFAULT 0,
    next_probe_at        INTEGER NOT NULL DEFAULT 0,
    probation_delay_ms   INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE subscriptions (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL UNIQUE,
    url                 TEXT NOT NULL,
    endpoint_id         TEXT NOT NULL,
    event_types         TEXT NOT NULL,
    subject_begins_with TEXT NOT NULL,
    subject_ends_with   TEXT NOT NULL,
    retry_policy        BLOB,
    timeout_ms          INTEGER NOT NULL,
    headers             TEXT NOT NULL,
    dead_letter         INTEGER NOT NULL,
    state               TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) WITHOUT ROWID;

-- AUTOINCREMENT: a sequence is never reused, even after Cleanup deletes the
-- newest events, so a seq held in memory never names another event.
-- UNIQUE (id, source) rather than (source, id): the same uniqueness, and the
-- index also serves lookups by the CloudEvents id alone (delivery search).
-- published_at precedes payload so that reading it never touches overflow pages.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL,
    source       TEXT NOT NULL,
    type         TEXT NOT NULL,
    subject      TEXT NOT NULL,
    published_at INTEGER NOT NULL,
    payload      BLOB NOT NULL,
    UNIQUE (id, source)
);
CREATE INDEX events_published ON events (published_at);

CREATE TABLE deliveries (
    id                 TEXT PRIMARY KEY,
    subscription_id    TEXT NOT NULL,
    endpoint_id        TEXT NOT NULL,
    event_seq          INTEGER NOT NULL,
    status             TEXT NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    round_attempts     INTEGER NOT NULL DEFAULT 0,
    round_start        INTEGER NOT NULL,
    first_failure      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at    INTEGER NOT NULL,
    last_attempt_at    INTEGER NOT NULL DEFAULT 0,
    last_status_code   INTEGER NOT NULL DEFAULT 0,
    last_outcome       TEXT NOT NULL DEFAULT '',
    dead_letter_reason TEXT NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    delivered_at       INTEGER NOT NULL DEFAULT 0,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_until        INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- The due loader: fresh and retry lanes of pending, unleased deliveries.
-- The trailing (status, lease_until, attempts) columns cost a few bytes per
-- entry, never change while a row is in the index, and make the index
-- covering for the lane's own conditions: counting a lane then reads only the
-- index (SQLite does not infer those columns from the partial-index WHERE).
CREATE INDEX deliveries_fresh ON deliveries (endpoint_id, next_attempt_at, status, lease_until, attempts)
    WHERE status = 'pending' AND lease_until = 0 AND attempts = 0;
CREATE INDEX deliveries_retry ON deliveries (endpoint_id, next_attempt_at, status, lease_until, attempts)
    WHERE status = 'pending' AND lease_until = 0 AND attempts > 0;
-- Leased deliveries (few: the dispatcher's in-memory window), for clearing
-- leases at Open and counting pending deliveries.
CREATE INDEX deliveries_leased ON deliveries (status, attempts, lease_until)
    WHERE lease_until > 0;
-- Listing, newest first (IDs sort by creation time).
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);
CREATE INDEX deliveries_subscription_status ON deliveries (subscription_id, status, id);
CREATE INDEX deliveries_status ON deliveries (status, id);
CREATE INDEX deliveries_event ON deliveries (event_seq);

-- duration_us: microseconds, since attempts on a LAN often take less than 1 ms.
CREATE TABLE attempts (
    delivery_id   TEXT NOT NULL,
    number        INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    duration_us   INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    outcome       TEXT NOT NULL,
    error         TEXT NOT NULL,
    response_body BLOB,
    PRIMARY KEY (delivery_id, number)
);

-- Cluster-wide roles (TryLead): who holds each one and until when (Unix ms).
-- A role whose until lies before now is free for anyone to take. With one
-- process per file it always goes to this process, but the row keeps the
-- contract identical to the PostgreSQL store's.
CREATE TABLE leaders (
    name  TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    until INTEGER NOT NULL
) WITHOUT ROWID;
