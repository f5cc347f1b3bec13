-- The delivery rollups (internal/store/engine/stats.go): reads and
-- pruning. They are written by the writer (record.go's addStats).

-- One range of delivery_stats_account, named (INDEXED BY) so that its plan
-- never changes.
-- name: DeliveryStats
SELECT minute / ?1 * ?1 AS at, CAST(SUM(delivered) AS BIGINT), CAST(SUM(failed) AS BIGINT), CAST(SUM(dead_lettered) AS BIGINT),
	CAST(SUM(lat0) AS BIGINT), CAST(SUM(lat1) AS BIGINT), CAST(SUM(lat2) AS BIGINT), CAST(SUM(lat3) AS BIGINT),
	CAST(SUM(lat4) AS BIGINT), CAST(SUM(lat5) AS BIGINT), CAST(SUM(lat6) AS BIGINT), CAST(SUM(lat7) AS BIGINT),
	CAST(SUM(lat8) AS BIGINT), CAST(SUM(lat9) AS BIGINT), CAST(SUM(lat10) AS BIGINT), CAST(SUM(lat11) AS BIGINT),
	CAST(SUM(lat12) AS BIGINT), CAST(SUM(lat13) AS BIGINT), CAST(SUM(lat14) AS BIGINT), CAST(SUM(lat15) AS BIGINT)
FROM delivery_stats INDEXED BY delivery_stats_account
WHERE account_id = ?6 AND minute >= ?2 AND minute < ?3
	AND (?4 = '' OR subscription_id = ?4) AND (?5 = '' OR endpoint_id = ?5)
GROUP BY at ORDER BY at

-- One range of the primary key; ?6 is ''.
-- name: DeliveryStatsAll
SELECT minute / ?1 * ?1 AS at, CAST(SUM(delivered) AS BIGINT), CAST(SUM(failed) AS BIGINT), CAST(SUM(dead_lettered) AS BIGINT),
	CAST(SUM(lat0) AS BIGINT), CAST(SUM(lat1) AS BIGINT), CAST(SUM(lat2) AS BIGINT), CAST(SUM(lat3) AS BIGINT),
	CAST(SUM(lat4) AS BIGINT), CAST(SUM(lat5) AS BIGINT), CAST(SUM(lat6) AS BIGINT), CAST(SUM(lat7) AS BIGINT),
	CAST(SUM(lat8) AS BIGINT), CAST(SUM(lat9) AS BIGINT), CAST(SUM(lat10) AS BIGINT), CAST(SUM(lat11) AS BIGINT),
	CAST(SUM(lat12) AS BIGINT), CAST(SUM(lat13) AS BIGINT), CAST(SUM(lat14) AS BIGINT), CAST(SUM(lat15) AS BIGINT)
FROM delivery_stats
WHERE ?6 = '' AND minute >= ?2 AND minute < ?3
	AND (?4 = '' OR subscription_id = ?4) AND (?5 = '' OR endpoint_id = ?5)
GROUP BY at ORDER BY at

-- The oldest first: a range of the primary key.
-- name: DeleteOldStats
DELETE FROM delivery_stats WHERE (minute, subscription_id, endpoint_id) IN (
	SELECT minute, subscription_id, endpoint_id FROM delivery_stats WHERE minute < ?1 ORDER BY minute LIMIT ?2)
