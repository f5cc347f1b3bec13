-- Accounts and API keys (internal/store/engine/accounts.go).

-- A plain read: the one writer, which runs every write transaction, is
-- what serialises the account and key writes (PostgreSQL locks the row).
-- name: LockAuth
SELECT value FROM counters WHERE name = 'auth'

-- One process owns the file: there is no other node to tell.
-- name: BumpAuth
UPDATE counters SET value = value + 1 WHERE name = 'auth' RETURNING value

-- name: AuthVersion
SELECT value FROM counters WHERE name = 'auth'

-- name: InsertAccount
INSERT INTO accounts (id, name, settings, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT DO NOTHING

-- name: GetAccount
SELECT id, name, settings, created_at, updated_at FROM accounts WHERE id = ?1

-- name: AccountByName
SELECT id FROM accounts WHERE name = ?1

-- name: UpdateAccount
UPDATE accounts SET name = ?2, settings = ?3, updated_at = ?4 WHERE id = ?1

-- name: DeleteAccount
DELETE FROM accounts WHERE id = ?1

-- name: AccountSubscribed
-- A subscription of the account, or a source that publishes into it.
SELECT 1 FROM subscriptions WHERE account_id = ?1
UNION ALL
SELECT 1 FROM sources WHERE account_id = ?1
LIMIT 1

-- name: DeleteAccountKeys
DELETE FROM api_keys WHERE account_id = ?1

-- A plain read: the one writer lets no DeleteAccount run meanwhile.
-- name: AccountExists
SELECT 1 FROM accounts WHERE id = ?1

-- The key of accounts_list, ((id <> 'acc_default') || id), must stay word
-- for word the index's expression for SQLite to seek it: "0acc_default"
-- for acc_default, "1" and the ID for any other account. The cursor's key
-- is ?1 (0 for a cursor of "" or acc_default, 1 for any other) then ?2
-- (the cursor): "0" before everything.
-- name: ListAccountSizes
SELECT octet_length(name) + octet_length(settings) FROM accounts
WHERE ((id <> 'acc_default') || id) > (?1 || ?2) ORDER BY ((id <> 'acc_default') || id) LIMIT ?3

-- name: ListAccounts
SELECT id, name, settings, created_at, updated_at FROM accounts
WHERE ((id <> 'acc_default') || id) > (?1 || ?2) ORDER BY ((id <> 'acc_default') || id) LIMIT ?3

-- name: InsertKey
INSERT INTO api_keys (id, account_id, role, name, hash, prefix, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT DO NOTHING

-- name: GetKey
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys WHERE id = ?1

-- name: KeyByHash
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys WHERE hash = ?1

-- name: AnyKey
SELECT 1 FROM api_keys LIMIT 1

-- name: DeleteKey
DELETE FROM api_keys WHERE id = ?1

-- name: ListKeySizes
SELECT octet_length(name) FROM api_keys WHERE account_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3

-- name: ListKeys
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys
WHERE account_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3
