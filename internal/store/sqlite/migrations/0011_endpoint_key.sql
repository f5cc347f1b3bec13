-- Herald schema, version 11: endpoint IDs keyed with a secret of the
-- installation.
--
-- An endpoint ID was an unkeyed SHA-256 of the account and the delivery
-- URL, so whoever saw an ID could guess a password in the URL offline. An
-- ID is now the HMAC-SHA256 of the account and the URL, keyed with 32
-- random bytes made once per installation (store.EndpointKey) and kept in
-- installation_keys, read by the store when it opens.
--
-- After this SQL, in the same transaction, the store makes the key and
-- re-keys every endpoint ID stored (endpoints, subscriptions, deliveries,
-- the operational events) through endpoint_rekey, which it then drops,
-- and redacts the URL passwords kept in attempt errors
-- (sqlrow.RekeyEndpoints).
CREATE TABLE installation_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
);

CREATE TABLE endpoint_rekey (
    old TEXT PRIMARY KEY,
    new TEXT NOT NULL
);
