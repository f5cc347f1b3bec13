-- The event-type catalog (internal/store/engine/eventtypes.go).

-- The counter's row lock, held until the transaction ends, serialises the
-- catalog writes of every node.
-- name: LockEventTypes
SELECT value FROM counters WHERE name = 'event_types' FOR UPDATE

-- name: BumpEventTypes
UPDATE counters SET value = value + 1 WHERE name = 'event_types'

-- name: EventTypesVersion
SELECT value FROM counters WHERE name = 'event_types'

-- name: CountEventTypes
SELECT COUNT(*) FROM event_types

-- The bytes of every type but $1::text (eventtype.MaxCatalogBytes).
-- name: SizeOfOtherEventTypes
SELECT COALESCE(SUM(octet_length(description) + octet_length(grp) + octet_length(schemas) + octet_length(examples)), 0)
FROM event_types WHERE name <> $1::text

-- name: InsertEventType
INSERT INTO event_types (name, description, grp, schemas, examples, deprecated, archived_at, created_at, updated_at, revision)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT DO NOTHING

-- name: GetEventType
SELECT name, description, grp, schemas, examples, deprecated, archived_at, created_at, updated_at, revision
FROM event_types WHERE name = $1

-- name: GetEventTypeRevision
SELECT revision FROM event_types WHERE name = $1

-- name: UpdateEventType
UPDATE event_types SET description = $2, grp = $3, schemas = $4, examples = $5, deprecated = $6,
    archived_at = $7, updated_at = $8, revision = $9
WHERE name = $1 AND revision = $10

-- name: AllEventTypes
SELECT name, description, grp, schemas, examples, deprecated, archived_at, created_at, updated_at, revision
FROM event_types ORDER BY name

-- $1 is the group ('' for every group), $2 true to list archived types.
-- name: ListEventTypeSizes
SELECT octet_length(description) + octet_length(grp) + octet_length(schemas) + octet_length(examples) FROM event_types
WHERE ($1::text = '' OR grp = $1::text) AND ($2::boolean OR archived_at = 0) AND name > $3::text ORDER BY name LIMIT $4

-- name: ListEventTypes
SELECT name, description, grp, schemas, examples, deprecated, archived_at, created_at, updated_at, revision
FROM event_types
WHERE ($1::text = '' OR grp = $1::text) AND ($2::boolean OR archived_at = 0) AND name > $3::text ORDER BY name LIMIT $4
