-- Accounts and API keys (internal/store/engine/accounts.go).

-- The counter's row lock, held until the transaction ends, serialises the
-- account and key writes of every node (see engine/accounts.go).
-- name: LockAuth
SELECT value FROM counters WHERE name = 'auth' FOR UPDATE

-- Also tells every node listening (the change feed, changes.go) when the
-- transaction commits; the payload names the schema, as changedAuth does.
-- name: BumpAuth
WITH bumped AS (UPDATE counters SET value = value + 1 WHERE name = 'auth' RETURNING value)
SELECT value FROM bumped, pg_notify('herald_changes', current_schema() || ' auth')

-- name: AuthVersion
SELECT value FROM counters WHERE name = 'auth'

-- name: InsertAccount
INSERT INTO accounts (id, name, settings, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING

-- name: GetAccount
SELECT id, name, settings, created_at, updated_at FROM accounts WHERE id = $1

-- name: AccountByName
SELECT id FROM accounts WHERE name = $1

-- name: UpdateAccount
UPDATE accounts SET name = $2, settings = $3, updated_at = $4 WHERE id = $1

-- name: DeleteAccount
DELETE FROM accounts WHERE id = $1

-- name: AccountSubscribed
-- A subscription of the account, or a source that publishes into it.
SELECT 1 FROM subscriptions WHERE account_id = $1
UNION ALL
SELECT 1 FROM sources WHERE account_id = $1
LIMIT 1

-- name: DeleteAccountKeys
DELETE FROM api_keys WHERE account_id = $1

-- Locks the account's row in key share mode until the transaction ends:
-- DeleteAccount, which deletes the row first, waits for the caller.
-- name: AccountExists
SELECT 1 FROM accounts WHERE id = $1 FOR KEY SHARE

-- The order of accounts_list: acc_default first (id <> 'acc_default' is
-- false), then the others in ID order. $1 is false for a cursor of "" or
-- acc_default, true for any other.
-- name: ListAccountSizes
SELECT octet_length(name) + octet_length(settings) FROM accounts
WHERE (id <> 'acc_default', id) > ($1::boolean, $2::text) ORDER BY id <> 'acc_default', id LIMIT $3

-- name: ListAccounts
SELECT id, name, settings, created_at, updated_at FROM accounts
WHERE (id <> 'acc_default', id) > ($1::boolean, $2::text) ORDER BY id <> 'acc_default', id LIMIT $3

-- name: InsertKey
INSERT INTO api_keys (id, account_id, role, name, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT DO NOTHING

-- name: GetKey
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys WHERE id = $1

-- name: KeyByHash
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys WHERE hash = $1

-- name: AnyKey
SELECT 1 FROM api_keys LIMIT 1

-- name: DeleteKey
DELETE FROM api_keys WHERE id = $1

-- name: ListKeySizes
SELECT octet_length(name) FROM api_keys WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: ListKeys
SELECT id, account_id, role, name, hash, prefix, created_at FROM api_keys
WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3
