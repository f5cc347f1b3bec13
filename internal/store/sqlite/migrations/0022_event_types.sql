-- Herald schema, version 22: the event-type catalog (issue 38,
-- docs/event-types.md).
--
-- One row per event type, installation-wide, keyed by its name (the
-- CloudEvents type, case-sensitive). schemas is a JSON object of the type's
-- schema versions ({"1": {…}, "2": {…}}), examples a JSON array; times are
-- Unix milliseconds, archived_at 0 while the type is not archived.
-- revision counts the row's writes: an update names the revision it read.
-- event_types_group serves the list by group; the list of every type seeks
-- the primary key.
--
-- The counter event_types is advanced by every catalog write, so a process
-- caching the compiled catalog re-reads it only when it moved.
CREATE TABLE event_types (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    grp         TEXT NOT NULL,
    schemas     TEXT NOT NULL,
    examples    TEXT NOT NULL,
    deprecated  INTEGER NOT NULL,
    archived_at INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    revision    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX event_types_group ON event_types (grp, name);
INSERT INTO counters (name, value) VALUES ('event_types', 1);
