-- Herald schema for PostgreSQL, version 12: console sessions (internal/console).
--
-- A session is kept by the SHA-256 of its token (hash): the token itself is
-- only in the browser's cookie. key_hash is the hash of the API key that
-- signed in (as api_keys.hash), which every request of the session
-- authenticates again, so revoking the key ends its sessions. Times are
-- Unix milliseconds. console_sessions_key finds a key's sessions, most recently
-- seen first (the bound per key); console_sessions_idle finds the idle ones
-- the clean-up deletes.
CREATE TABLE console_sessions (
    hash         bytea PRIMARY KEY,
    key_hash     bytea NOT NULL,
    key_id       text NOT NULL,
    created_at   bigint NOT NULL,
    last_seen_at bigint NOT NULL
);
CREATE INDEX console_sessions_key ON console_sessions (key_hash, last_seen_at);
CREATE INDEX console_sessions_idle ON console_sessions (last_seen_at);
