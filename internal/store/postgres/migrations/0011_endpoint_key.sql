-- Herald schema for PostgreSQL, version 11: endpoint IDs keyed with a
-- secret of the installation.
--
-- An endpoint ID was an unkeyed SHA-256 of the account and the delivery
-- URL, so whoever saw an ID could guess a password in the URL offline. An
-- ID is now the HMAC-SHA256 of the account and the URL, keyed with 32
-- random bytes made once per installation (store.EndpointKey) and kept in
-- installation_keys, which every node reads when it opens the store: all
-- nodes on the schema make the same IDs.
--
-- After this SQL, in the same transaction (under the migration lock), the
-- store makes the key and re-keys every endpoint ID stored (endpoints,
-- subscriptions, deliveries, the operational events) through
-- endpoint_rekey, which it then drops, and redacts the URL passwords kept
-- in attempt errors (sqlrow.RekeyEndpoints).
CREATE TABLE installation_keys (
    name text COLLATE "C" PRIMARY KEY,
    key  bytea NOT NULL
);

CREATE TABLE endpoint_rekey (
    old text COLLATE "C" PRIMARY KEY,
    new text COLLATE "C" NOT NULL
);
