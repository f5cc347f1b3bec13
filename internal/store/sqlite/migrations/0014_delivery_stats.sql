-- Herald schema, version 14: per-minute delivery rollups (internal/stats).
--
-- One row per (minute, subscription, endpoint), added to in the group
-- commit that records the outcomes it counts (and by pull
-- acknowledgements), by every node: minute is the minute's start in Unix
-- milliseconds; delivered, failed (attempts that failed) and dead_lettered
-- count; latK counts attempts by latency bucket K (stats.Bucket: under
-- 1 ms, then powers of two of a millisecond, the last 16.384 s or more).
-- delivery_stats_account reads an account's minutes; the primary key's
-- first column finds the minutes the clean-up deletes after 7 days.
CREATE TABLE delivery_stats (
    minute          INTEGER NOT NULL,
    account_id      TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    endpoint_id     TEXT NOT NULL,
    delivered       INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0,
    dead_lettered   INTEGER NOT NULL DEFAULT 0,
    lat0  INTEGER NOT NULL DEFAULT 0,
    lat1  INTEGER NOT NULL DEFAULT 0,
    lat2  INTEGER NOT NULL DEFAULT 0,
    lat3  INTEGER NOT NULL DEFAULT 0,
    lat4  INTEGER NOT NULL DEFAULT 0,
    lat5  INTEGER NOT NULL DEFAULT 0,
    lat6  INTEGER NOT NULL DEFAULT 0,
    lat7  INTEGER NOT NULL DEFAULT 0,
    lat8  INTEGER NOT NULL DEFAULT 0,
    lat9  INTEGER NOT NULL DEFAULT 0,
    lat10 INTEGER NOT NULL DEFAULT 0,
    lat11 INTEGER NOT NULL DEFAULT 0,
    lat12 INTEGER NOT NULL DEFAULT 0,
    lat13 INTEGER NOT NULL DEFAULT 0,
    lat14 INTEGER NOT NULL DEFAULT 0,
    lat15 INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, subscription_id, endpoint_id)
) WITHOUT ROWID;
CREATE INDEX delivery_stats_account ON delivery_stats (account_id, minute);
