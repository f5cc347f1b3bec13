-- Herald schema for PostgreSQL, version 24: broker sources (issue 40,
-- docs/sources.md).
--
-- One row per source: what it reads (config, the source.Config as JSON
-- text, read whole), whether it is paused, revision (counts the writes of
-- config and paused: a consumer restarts when it moves), and its
-- consumers' report (counts, lag, -1 when unknown, the last error and
-- whether it is failing). Times are Unix milliseconds, 0 for none. A name,
-- when given, is unique in its account (sources_name).
--
-- source_dead_letters holds the messages a source could not publish, at
-- most 10,000 per source (the oldest deleted as new ones come), each with
-- the first 64 KiB of its body and its whole size.
CREATE TABLE sources (
    id            text COLLATE "C" PRIMARY KEY,
    account_id    text NOT NULL,
    name          text NOT NULL,
    type          text NOT NULL,
    config        text NOT NULL,
    paused        boolean NOT NULL,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL,
    revision      bigint NOT NULL,
    received      bigint NOT NULL,
    published     bigint NOT NULL,
    duplicates    bigint NOT NULL,
    dead_lettered bigint NOT NULL,
    lag           bigint NOT NULL,
    last_error    text NOT NULL,
    last_error_at bigint NOT NULL,
    failing       boolean NOT NULL
);
CREATE UNIQUE INDEX sources_name ON sources (account_id, name) WHERE name <> '';
CREATE TABLE source_dead_letters (
    id          text COLLATE "C" PRIMARY KEY,
    source_id   text COLLATE "C" NOT NULL,
    message_id  text NOT NULL,
    reason      text NOT NULL,
    body        bytea NOT NULL,
    size        bigint NOT NULL,
    received_at bigint NOT NULL
);
CREATE INDEX source_dead_letters_source ON source_dead_letters (source_id, id);
