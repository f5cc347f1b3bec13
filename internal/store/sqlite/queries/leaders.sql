-- Roles held by one process at a time (internal/store/engine/leaders.go).

-- The upsert changes no row when the role is another owner's and its term
-- has not ended.
-- name: TryLead
INSERT INTO leaders (name, owner, until) VALUES (?1, ?2, ?4)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
WHERE leaders.until < ?3 OR leaders.owner = excluded.owner

-- name: GetLeader
SELECT owner, until FROM leaders WHERE name = ?1
