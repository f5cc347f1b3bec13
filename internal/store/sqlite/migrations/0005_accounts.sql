-- Herald schema, version 5: accounts (tenants) and API keys.
--
-- Every subscription, event, delivery and endpoint belongs to one account
-- (account_id). The account acc_default always exists: everything written
-- before this version, and everything written without an account, is its
-- (every account_id column defaults to it, as on PostgreSQL; the store
-- always writes it).
--
-- settings is the account's store.AccountSettings as JSON. An API key is
-- kept as the SHA-256 of the key (hash, unique: the key is looked up by it)
-- and its first characters (prefix), never the key itself.
--
-- accounts_list orders the account list: acc_default first, then the others
-- in ID order (its key is 0 then the ID for acc_default, 1 then the ID for
-- the others), so that every page of the list is an index seek.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    settings   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX accounts_list ON accounts ((id <> 'acc_default') || id);
INSERT INTO accounts (id, name, settings, created_at, updated_at)
VALUES ('acc_default', 'default', '{"failure_policy":"retry"}',
    CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER));

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    role       TEXT NOT NULL,
    name       TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX api_keys_account ON api_keys (account_id, id);

-- The auth version (store.AccountStore.AuthVersion): every account and key
-- write advances it in its own transaction.
INSERT INTO counters (name, value) VALUES ('auth', 1);

-- A subscription's name is unique in its account. The name's UNIQUE was
-- inline in version 1's table, and SQLite cannot drop such a constraint:
-- the table is rebuilt (create, copy, drop, rename) with its indexes.
CREATE TABLE subscriptions_new (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL DEFAULT 'acc_default',
    name                TEXT NOT NULL,
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
    updated_at          INTEGER NOT NULL,
    version             INTEGER NOT NULL DEFAULT 1,
    secret_headers      TEXT NOT NULL DEFAULT '{}',
    signing             TEXT NOT NULL DEFAULT '',
    UNIQUE (account_id, name)
) WITHOUT ROWID;
INSERT INTO subscriptions_new (id, account_id, name, url, endpoint_id, event_types, subject_begins_with,
    subject_ends_with, retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at, version,
    secret_headers, signing)
SELECT id, 'acc_default', name, url, endpoint_id, event_types, subject_begins_with,
    subject_ends_with, retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at, version,
    secret_headers, signing
FROM subscriptions;
DROP TABLE subscriptions;
ALTER TABLE subscriptions_new RENAME TO subscriptions;
CREATE INDEX subscriptions_version ON subscriptions (version);
CREATE INDEX subscriptions_endpoint ON subscriptions (endpoint_id);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);

-- Deduplication is per (account, source, id): two accounts may publish the
-- same event. UNIQUE (id, source) was inline too, so the table is rebuilt;
-- the id stays first, so that lookups by the CloudEvents id alone (delivery
-- search) still use the index. The copy keeps every seq, and the
-- AUTOINCREMENT counter (sqlite_sequence) is carried over before the old
-- table (and its counter) is dropped, so that a seq is never reused, even
-- that of the newest events Cleanup deleted. Rewriting the events takes
-- time in proportion to their payloads.
CREATE TABLE events_new (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   TEXT NOT NULL DEFAULT 'acc_default',
    id           TEXT NOT NULL,
    source       TEXT NOT NULL,
    type         TEXT NOT NULL,
    subject      TEXT NOT NULL,
    published_at INTEGER NOT NULL,
    payload      BLOB NOT NULL,
    UNIQUE (id, source, account_id)
);
INSERT INTO events_new (seq, account_id, id, source, type, subject, published_at, payload)
SELECT seq, 'acc_default', id, source, type, subject, published_at, payload FROM events ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'events_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_new', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_published ON events (published_at);

-- A delivery's account is its event's (and its subscription's). An
-- account's deliveries are listed newest first, by status or not, from
-- these indexes. They replace deliveries_status (status, id): the API
-- always lists within one account, and every index costs each delivery
-- write. A list by status across every account (a tool's, not the API's)
-- reads the table newest first.
ALTER TABLE deliveries ADD COLUMN account_id TEXT NOT NULL DEFAULT 'acc_default';
DROP INDEX deliveries_status;
CREATE INDEX deliveries_account_status ON deliveries (account_id, status, id);
CREATE INDEX deliveries_account ON deliveries (account_id, id);

-- An endpoint is an account's delivery URL (store.EndpointIDFor): two
-- accounts delivering to one URL have a circuit each.
ALTER TABLE endpoints ADD COLUMN account_id TEXT NOT NULL DEFAULT 'acc_default';
CREATE INDEX endpoints_account ON endpoints (account_id, id);
