-- Herald schema for PostgreSQL, version 1.
--
-- Times are bigint Unix milliseconds, 0 meaning "unset" (the SQLite store's
-- representation, so both stores round-trip times identically). Lists and
-- maps are JSON text; the retry policy is bytea, kept byte for byte.
-- Identifiers use the "C" collation: they compare and sort bytewise, as in
-- SQLite, whatever the database's locale, and btree comparisons are cheap.
--
-- A delivery is leased while lease_until <> 0: held by lease_owner until
-- lease_until, after which any node may take it over. The due indexes are
-- partial indexes of pending deliveries by lane (attempts = 0 is fresh,
-- attempts > 0 is retry) that deliberately do not mention the lease columns:
-- claiming or releasing a delivery then changes no indexed column, so it is
-- a HOT update (no index writes; hence the fillfactor), and leased rows (the
-- nodes' in-memory windows: few) are skipped by a filter. The queries in
-- claim.go repeat the partial-index conditions: change both together.

-- An endpoint's circuit health (internal/health) is kept in the columns
-- after url, shared by every node; health_window is the rolling window's
-- non-empty slices as JSON [[slice, attempts, failures], ...].
CREATE TABLE endpoints (
    id                   text COLLATE "C" PRIMARY KEY,
    url                  text NOT NULL,
    state                text NOT NULL DEFAULT 'enabled',
    consecutive_failures bigint NOT NULL DEFAULT 0,
    health_window        text NOT NULL DEFAULT '[]',
    first_attempt_at     bigint NOT NULL DEFAULT 0,
    last_success_at      bigint NOT NULL DEFAULT 0,
    last_failure_at      bigint NOT NULL DEFAULT 0,
    disabled_at          bigint NOT NULL DEFAULT 0,
    frozen_at            bigint NOT NULL DEFAULT 0,
    next_probe_at        bigint NOT NULL DEFAULT 0,
    probation_delay_ms   bigint NOT NULL DEFAULT 0,
    created_at           bigint NOT NULL,
    updated_at           bigint NOT NULL DEFAULT 0
);

CREATE TABLE subscriptions (
    id                  text COLLATE "C" PRIMARY KEY,
    name                text NOT NULL,
    url                 text NOT NULL,
    endpoint_id         text COLLATE "C" NOT NULL,
    event_types         text NOT NULL,
    subject_begins_with text NOT NULL,
    subject_ends_with   text NOT NULL,
    retry_policy        bytea,
    timeout_ms          bigint NOT NULL,
    headers             text NOT NULL,
    dead_letter         boolean NOT NULL,
    state               text NOT NULL,
    created_at          bigint NOT NULL,
    updated_at          bigint NOT NULL,
    CONSTRAINT subscriptions_name_key UNIQUE (name)
);

-- An identity sequence never goes back, so a seq is never reused, even after
-- Cleanup deletes the newest events. Publish draws from events_seq_seq
-- itself (to number a batch in input order while inserting it in key order). UNIQUE (id, source) rather than
-- (source, id): the same uniqueness, and the index also serves lookups by the
-- CloudEvents id alone (delivery search).
CREATE TABLE events (
    seq          bigint GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME events_seq_seq) PRIMARY KEY,
    id           text COLLATE "C" NOT NULL,
    source       text COLLATE "C" NOT NULL,
    type         text NOT NULL,
    subject      text NOT NULL,
    published_at bigint NOT NULL,
    payload      bytea NOT NULL,
    CONSTRAINT events_id_source_key UNIQUE (id, source)
);
CREATE INDEX events_published ON events (published_at);

CREATE TABLE deliveries (
    id                 text COLLATE "C" PRIMARY KEY,
    subscription_id    text COLLATE "C" NOT NULL,
    endpoint_id        text COLLATE "C" NOT NULL,
    event_seq          bigint NOT NULL,
    status             text NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    round_attempts     integer NOT NULL DEFAULT 0,
    round_start        bigint NOT NULL,
    first_failure      bigint NOT NULL DEFAULT 0,
    next_attempt_at    bigint NOT NULL,
    last_attempt_at    bigint NOT NULL DEFAULT 0,
    last_status_code   integer NOT NULL DEFAULT 0,
    last_outcome       text NOT NULL DEFAULT '',
    dead_letter_reason text NOT NULL DEFAULT '',
    created_at         bigint NOT NULL,
    delivered_at       bigint NOT NULL DEFAULT 0,
    lease_owner        text NOT NULL DEFAULT '',
    lease_until        bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 80);

-- The due loader: fresh and retry lanes of pending deliveries, leased or not,
-- in due order per endpoint (id last: a stable order among equal times).
CREATE INDEX deliveries_fresh ON deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND attempts = 0;
CREATE INDEX deliveries_retry ON deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending' AND attempts > 0;
-- Listing, newest first (IDs sort by creation time).
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);
CREATE INDEX deliveries_subscription_status ON deliveries (subscription_id, status, id);
CREATE INDEX deliveries_status ON deliveries (status, id);
CREATE INDEX deliveries_event ON deliveries (event_seq);

-- duration_us: microseconds, since attempts on a LAN often take less than 1 ms.
CREATE TABLE attempts (
    delivery_id   text COLLATE "C" NOT NULL,
    number        integer NOT NULL,
    started_at    bigint NOT NULL,
    duration_us   bigint NOT NULL,
    status_code   integer NOT NULL,
    outcome       text NOT NULL,
    error         text NOT NULL,
    response_body bytea,
    PRIMARY KEY (delivery_id, number)
);

-- Cluster-wide roles (TryLead): the node holding each one and the end of its
-- term (Unix ms). A role whose until lies before now is free for any node.
CREATE TABLE leaders (
    name  text COLLATE "C" PRIMARY KEY,
    owner text NOT NULL,
    until bigint NOT NULL
);
