package sqlite

// Every write of endpoints takes the next endpoints version
// (bumpEndpointsSQL) and stores it on the rows it writes. The endpoints'
// own methods are the engine's (internal/store/engine/endpoints.go, whose
// BumpEndpoints statement is this one); the migrations still
// take a version here.
const bumpEndpointsSQL = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`
