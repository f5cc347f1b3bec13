-- Herald schema for PostgreSQL, version 15: subscriber portal sessions (internal/console's
-- portal) in console_sessions.
--
-- A row whose portal_account is set is a portal session, limited to that
-- account and, when portal_subscriptions (a JSON array of subscription
-- IDs) is set, to those subscriptions; console sessions leave the four
-- columns NULL. A portal session is made unopened, kept by the hash of its
-- one-time link's token; opening the link sets opened_at and gives the row
-- the hash of the session's cookie token, in one statement, so a link
-- opens once. It ends at expires_at (Unix milliseconds), opened or not;
-- console_sessions_expiry finds the ended ones the clean-up deletes.
ALTER TABLE console_sessions ADD COLUMN portal_account text;
ALTER TABLE console_sessions ADD COLUMN portal_subscriptions text;
ALTER TABLE console_sessions ADD COLUMN expires_at bigint;
ALTER TABLE console_sessions ADD COLUMN opened_at bigint;
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at) WHERE expires_at IS NOT NULL;
