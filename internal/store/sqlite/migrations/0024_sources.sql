-- Herald schema, version 24: broker sources (issue 40, docs/sources.md).
--
-- One row per source: what it reads (config, the source.Config as JSON),
-- whether it is paused, revision (counts the writes of config and paused:
-- a consumer restarts when it moves), and its consumers' report (counts,
-- lag, -1 when unknown, the last error and whether it is failing). Times
-- are Unix milliseconds, 0 for none. A name, when given, is unique in its
-- account (sources_name).
--
-- source_dead_letters holds the messages a source could not publish, at
-- most 10,000 per source (the oldest deleted as new ones come), each with
-- the first 64 KiB of its body and its whole size.
CREATE TABLE sources (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    config        TEXT NOT NULL,
    paused        INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    revision      INTEGER NOT NULL,
    received      INTEGER NOT NULL,
    published     INTEGER NOT NULL,
    duplicates    INTEGER NOT NULL,
    dead_lettered INTEGER NOT NULL,
    lag           INTEGER NOT NULL,
    last_error    TEXT NOT NULL,
    last_error_at INTEGER NOT NULL,
    failing       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX sources_name ON sources (account_id, name) WHERE name <> '';
CREATE TABLE source_dead_letters (
    id          TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    reason      TEXT NOT NULL,
    body        BLOB NOT NULL,
    size        INTEGER NOT NULL,
    received_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX source_dead_letters_source ON source_dead_letters (source_id, id);
