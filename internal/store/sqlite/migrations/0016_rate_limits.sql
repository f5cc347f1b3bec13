-- Herald schema, version 16: endpoint rate limits
-- (internal/endpoint/ratelimit.go).
--
-- rate_per_second and rate_burst are the endpoint's rate limit, written
-- with its health (ModifyEndpoints); 0 and 0 is none, as for every row
-- written before this version. On SQLite one process sends, so the token
-- bucket itself is kept in memory (internal/scheduling/rate.go).
ALTER TABLE endpoints ADD COLUMN rate_per_second REAL NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN rate_burst INTEGER NOT NULL DEFAULT 0;
