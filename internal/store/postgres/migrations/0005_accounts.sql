-- Herald schema for PostgreSQL, version 5: accounts (tenants) and API keys.
--
-- Every subscription, event, delivery and endpoint belongs to one account
-- (account_id). The account acc_default always exists: everything written
-- before this version, and everything written without an account, is its.
-- The new columns have a constant DEFAULT, so adding them rewrites no table
-- (PostgreSQL 11 and later keep the default in the catalog); the rebuilt
-- unique index of events and the new indexes are what take time on a large
-- database.
--
-- Nodes of earlier builds cannot publish on this schema: their
-- ON CONFLICT (id, source) no longer names a unique index, so each of their
-- publishes fails until they run this build. Migrate when the old nodes are
-- stopped, or upgrade them together.
--
-- settings is the account's store.AccountSettings as JSON. An API key is
-- kept as the SHA-256 of the key (hash, unique: the key itself is looked up
-- by it) and its first characters (prefix), never the key.
--
-- accounts_list orders the account list: acc_default first, then the others
-- in ID order (key (false, id) for acc_default, (true, id) for the others;
-- an ID of the ID alphabet sorts before "acc_default"), so that every page
-- of the list is an index seek (accounts.go repeats the expression).
CREATE TABLE accounts (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL,
    settings   text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    CONSTRAINT accounts_name_key UNIQUE (name)
);
CREATE INDEX accounts_list ON accounts ((id <> 'acc_default'), id);
INSERT INTO accounts (id, name, settings, created_at, updated_at)
VALUES ('acc_default', 'default', '{"failure_policy":"retry"}',
    (extract(epoch FROM now()) * 1000)::bigint, (extract(epoch FROM now()) * 1000)::bigint);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    role       text NOT NULL,
    name       text NOT NULL,
    hash       bytea NOT NULL,
    prefix     text NOT NULL,
    created_at bigint NOT NULL,
    CONSTRAINT api_keys_hash_key UNIQUE (hash)
);
CREATE INDEX api_keys_account ON api_keys (account_id, id);

-- The auth version (store.AccountStore.AuthVersion): every account and key
-- write advances it in its own transaction, taking the counter's row lock
-- first, so those writes are serialised (which makes "create the first key
-- only if there is none" exactly-once across nodes) and a node caching keys
-- learns of any change by reading one number.
INSERT INTO counters (name, value) VALUES ('auth', 1);

-- A subscription's name is unique in its account.
ALTER TABLE subscriptions ADD COLUMN account_id text COLLATE "C" NOT NULL DEFAULT 'acc_default';
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_name_key,
    ADD CONSTRAINT subscriptions_account_name_key UNIQUE (account_id, name);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);

-- Dedup is per (account, source, id): two accounts may publish the same
-- event. The id stays first, so lookups by the CloudEvents id alone
-- (delivery search) still use the index.
ALTER TABLE events ADD COLUMN account_id text COLLATE "C" NOT NULL DEFAULT 'acc_default';
ALTER TABLE events DROP CONSTRAINT events_id_source_key,
    ADD CONSTRAINT events_id_source_account_key UNIQUE (id, source, account_id);

-- A delivery's account is its event's (and its subscription's). It never
-- changes, so claims and releases stay HOT updates (see 0001). Listing an
-- account's deliveries, newest first, by status or not, seeks these
-- indexes. (status, id) goes, one index fewer to write per delivery: the
-- API always lists within an account, and a list of every account by
-- status alone reads the deliveries newest first until its page is full.
ALTER TABLE deliveries ADD COLUMN account_id text COLLATE "C" NOT NULL DEFAULT 'acc_default';
DROP INDEX deliveries_status;
CREATE INDEX deliveries_account_status ON deliveries (account_id, status, id);
CREATE INDEX deliveries_account ON deliveries (account_id, id);

-- An endpoint is an account's delivery URL (store.EndpointIDFor): two
-- accounts delivering to one URL have a circuit each.
ALTER TABLE endpoints ADD COLUMN account_id text COLLATE "C" NOT NULL DEFAULT 'acc_default';
CREATE INDEX endpoints_account ON endpoints (account_id, id);
