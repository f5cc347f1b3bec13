package sqlite

import "fmt"

// Every write of endpoints takes the next endpoints version
// (bumpEndpointsSQL) and stores it on the rows it writes. The endpoints'
// own methods are the engine's (internal/store/engine/endpoints.go, whose
// BumpEndpoints statement is this one); the subscription writes, which
// create endpoints, and the migrations still take a version here.
const bumpEndpointsSQL = `UPDATE counters SET value = value + 1 WHERE name = 'endpoints' RETURNING value`

// bumpEndpoints takes the next endpoints version in the write transaction.
func (w *writer) bumpEndpoints() (int64, error) {
	var v int64
	if err := w.scanRow(bumpEndpointsSQL, nil, &v); err != nil {
		return 0, fmt.Errorf("advance the endpoints version: %w", err)
	}
	return v, nil
}
