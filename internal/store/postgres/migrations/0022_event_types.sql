-- Herald schema for PostgreSQL, version 22: the event-type catalog (issue
-- 38, docs/event-types.md).
--
-- One row per event type, installation-wide, keyed by its name (the
-- CloudEvents type, case-sensitive, in byte order: COLLATE "C"). schemas is
-- a JSON object of the type's schema versions ({"1": {…}, "2": {…}}),
-- examples a JSON array, both as text (read whole, never queried); times
-- are Unix milliseconds, archived_at 0 while the type is not archived.
-- revision counts the row's writes: an update names the revision it read.
-- event_types_group serves the list by group; the list of every type seeks
-- the primary key.
--
-- The counter event_types is advanced by every catalog write (under its
-- row's lock), so a node caching the compiled catalog re-reads it only when
-- it moved.
CREATE TABLE event_types (
    name        text COLLATE "C" PRIMARY KEY,
    description text NOT NULL,
    grp         text COLLATE "C" NOT NULL,
    schemas     text NOT NULL,
    examples    text NOT NULL,
    deprecated  boolean NOT NULL,
    archived_at bigint NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    revision    bigint NOT NULL
);
CREATE INDEX event_types_group ON event_types (grp, name);
INSERT INTO counters (name, value) VALUES ('event_types', 1);
