-- Broker sources and their dead letters (internal/store/engine/sources.go).

-- name: CountSources
SELECT COUNT(*) FROM sources

-- Nothing when the name is taken in the account (sources_name).
-- name: InsertSource
INSERT INTO sources (id, account_id, name, type, config, paused, created_at, updated_at, revision,
    received, published, duplicates, dead_lettered, lag, last_error, last_error_at, failing)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
ON CONFLICT DO NOTHING

-- name: GetSource
SELECT id, account_id, name, type, config, paused, created_at, updated_at, revision,
    received, published, duplicates, dead_lettered, lag, last_error, last_error_at, failing
FROM sources WHERE id = $1

-- name: ListSourceSizes
SELECT octet_length(config) + octet_length(last_error) FROM sources WHERE id > $1 ORDER BY id LIMIT $2

-- name: ListSources
SELECT id, account_id, name, type, config, paused, created_at, updated_at, revision,
    received, published, duplicates, dead_lettered, lag, last_error, last_error_at, failing
FROM sources WHERE id > $1 ORDER BY id LIMIT $2

-- name: AllSources
SELECT id, account_id, name, type, config, paused, created_at, updated_at, revision,
    received, published, duplicates, dead_lettered, lag, last_error, last_error_at, failing
FROM sources ORDER BY id

-- name: SourceNameTaken
SELECT COUNT(*) FROM sources WHERE account_id = $1 AND name = $2 AND id <> $3

-- name: UpdateSource
UPDATE sources SET name = $2, config = $3, paused = $4, updated_at = $5, revision = $6
WHERE id = $1 AND revision = $7

-- name: DeleteSource
DELETE FROM sources WHERE id = $1

-- name: DeleteSourceDeadLetters
DELETE FROM source_dead_letters WHERE source_id = $1

-- name: DeleteLeader
DELETE FROM leaders WHERE name = $1

-- name: ReportSource
UPDATE sources SET received = received + $2, published = published + $3, duplicates = duplicates + $4, lag = $5,
    last_error = CASE WHEN $6::text <> '' THEN $6::text ELSE last_error END,
    last_error_at = CASE WHEN $6::text <> '' THEN $7 ELSE last_error_at END,
    failing = CASE $8::int WHEN 1 THEN TRUE WHEN 0 THEN FALSE ELSE failing END
WHERE id = $1

-- name: CountSourceDeadLetter
UPDATE sources SET dead_lettered = dead_lettered + 1 WHERE id = $1

-- name: InsertSourceDeadLetter
INSERT INTO source_dead_letters (id, source_id, message_id, reason, body, size, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)

-- name: TrimSourceDeadLetters
DELETE FROM source_dead_letters WHERE source_id = $1 AND id <= (
    SELECT id FROM source_dead_letters WHERE source_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)

-- name: ListSourceDeadLetterSizes
SELECT octet_length(body) + octet_length(reason) FROM source_dead_letters
WHERE source_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: ListSourceDeadLetters
SELECT id, source_id, message_id, reason, body, size, received_at FROM source_dead_letters
WHERE source_id = $1 AND id > $2 ORDER BY id LIMIT $3
