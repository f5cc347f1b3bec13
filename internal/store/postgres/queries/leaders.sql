-- Roles held by one process at a time (internal/store/engine/leaders.go).

-- One atomic statement: of concurrent callers for a free role one inserts;
-- the others wait for its row and then find it held (the update's WHERE
-- is false: no row changed).
-- name: TryLead
INSERT INTO leaders AS l (name, owner, until) VALUES ($1, $2, $4)
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
WHERE l.until < $3 OR l.owner = EXCLUDED.owner

-- name: GetLeader
SELECT owner, until FROM leaders WHERE name = $1
