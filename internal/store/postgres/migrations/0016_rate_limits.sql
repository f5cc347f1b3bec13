-- Herald schema for PostgreSQL, version 16: endpoint rate limits
-- (internal/endpoint/ratelimit.go), shared by every node.
--
-- rate_per_second and rate_burst are the endpoint's rate limit, written
-- with its health (ModifyEndpoints); 0 and 0 is none, as for every row
-- written before this version. The DEFAULTs are constant: adding the
-- columns rewrites no table.
--
-- endpoint_buckets holds the token bucket of a limited endpoint, shared
-- by the nodes: tokens left at updated_at (the database's clock), what the
-- last take granted, and the limit and want of that take (the upsert's
-- proposed row carries them to its update). A node takes a few tokens at a time with one
-- upsert (TakeTokens, internal/store/postgres/buckets.go) that refills the
-- bucket for the time elapsed, capped at the burst. The row is made by the
-- first take and goes with its endpoint.
ALTER TABLE endpoints ADD COLUMN rate_per_second double precision NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN rate_burst integer NOT NULL DEFAULT 0;
CREATE TABLE endpoint_buckets (
	endpoint_id text COLLATE "C" PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
	tokens double precision NOT NULL,
	granted integer NOT NULL,
	updated_at timestamptz NOT NULL,
	per_second double precision NOT NULL,
	burst integer NOT NULL,
	want integer NOT NULL
);
