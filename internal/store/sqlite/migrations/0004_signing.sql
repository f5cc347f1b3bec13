-- Herald schema, version 4: secret headers and signing keys.
--
-- secret_headers: custom headers sent with every push whose values the API
-- never shows (JSON object, like headers). signing: the keys the
-- subscription's pushes are signed with (Standard Webhooks), as JSON: the
-- algorithm and the current key, then those of earlier rotations with their
-- expiry. The migration's Go step gives every subscription made before this
-- version an HMAC-SHA256 secret in the same transaction (sqlrow.BackfillSigning).
ALTER TABLE subscriptions ADD COLUMN secret_headers TEXT NOT NULL DEFAULT '{}';
ALTER TABLE subscriptions ADD COLUMN signing TEXT NOT NULL DEFAULT '';
