-- Herald schema, version 23: an event's schema errors (issue 38,
-- docs/event-types.md).
--
-- schema_errors holds, for an event accepted while its account's
-- settings.schema_validation is warn, how its data breaks its type's schema:
-- a JSON array of {"pointer", "keyword", "message"}, bounded by
-- eventtype.StoredErrors (at most 10 entries and 4096 bytes, a last entry
-- with the keyword "truncated" saying what was left out). It is NULL for
-- every other event: an event without errors costs nothing more.
ALTER TABLE events ADD COLUMN schema_errors TEXT;
