package postgres

// Every write of endpoints first takes the next endpoints version, locking
// the counter's row until it commits (so versions commit in order and an
// incremental reader misses none), and stores it on the rows it writes.
// The endpoints' own methods are the engine's
// (internal/store/engine/endpoints.go, whose BumpEndpoints statement does
// this and the notification in one); the migrations still take a version here.
const bumpEndpointsSQL = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`
