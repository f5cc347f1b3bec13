package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Endpoints and their health (store.EndpointStore). Every statement that
// returns endpoints selects the columns sqlrow.ScanEndpoint reads.
var (
	// qGetEndpoint reads endpoint $1.
	qGetEndpoint = query("GetEndpoint")
	// qAllEndpoints reads every endpoint, in ID order.
	qAllEndpoints = query("AllEndpoints")
	// qListEndpoints and qListEndpointSizes read the endpoints of account
	// $1 after ID $2 in ID order, of state $3 ('' for any), at most $4 of
	// them: the endpoints, or their sizes (their URL's and health
	// window's bytes). A seek of the account's endpoints_account index,
	// the state a filter on that walk (an account has one endpoint per
	// subscription URL).
	qListEndpoints     = query("ListEndpoints")
	qListEndpointSizes = query("ListEndpointSizes")
	// qListAllEndpoints and qListAllEndpointSizes are the same of every
	// account ($1 is ''): a walk of the primary key.
	qListAllEndpoints     = query("ListAllEndpoints")
	qListAllEndpointSizes = query("ListAllEndpointSizes")
	// qEndpointsVersion reads the endpoints version: the last one a
	// write of endpoints took (qBumpEndpoints).
	qEndpointsVersion = query("EndpointsVersion")
	// qChangedEndpoints reads the endpoints written at a version after
	// $1, in ID order (a range of endpoints_version).
	qChangedEndpoints = query("ChangedEndpoints")
	// qBumpEndpoints takes the next endpoints version and returns it.
	// Every write of endpoints takes one and stores it on the rows it
	// writes. On PostgreSQL it locks the counter's row until the
	// transaction ends, so that versions commit in order and an
	// incremental reader misses none, and tells the other nodes, at
	// commit, that endpoints changed (pg_notify).
	qBumpEndpoints = query("BumpEndpoints")
	// qLockEndpoints reads the endpoints of IDs $1 (a list), in ID order,
	// for a read-modify-write: on PostgreSQL locked until the transaction
	// ends (FOR UPDATE, in ID order, so that concurrent callers lock
	// overlapping sets in the same order and never deadlock); SQLite's
	// one writer serialises every write already.
	qLockEndpoints = query("LockEndpoints")
	// qSaveHealth writes, at endpoints version $1, the health, updated_at
	// and rate limit of the endpoints in $2 (a JSON array of
	// sqlrow.HealthRow, distinct IDs) and returns them as stored, in no
	// order. Unknown IDs are skipped.
	qSaveHealth = query("SaveHealth")
	// qTakeProbe moves endpoint $1's probe time, when set and not after
	// $2, to $3. It does not change the endpoint's version.
	qTakeProbe = query("TakeProbe")
)

// GetEndpoint implements store.EndpointStore.
func (s *Store) GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error) {
	e, err := sqlrow.ScanEndpoint(s.drv.Reader().QueryRow(ctx, qGetEndpoint, id))
	if errors.Is(err, driver.ErrNoRows) {
		return endpoint.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, store.ErrNotFound)
	}
	return e, err
}

// ListEndpoints implements store.EndpointStore: in ID order; the cursor is
// the last ID of the previous page. An account's page seeks its
// (account_id, id) index, which a state filters; without an account, the
// primary key.
func (s *Store) ListEndpoints(ctx context.Context, accountID string, state health.State, p store.Page) ([]endpoint.Endpoint, string, error) {
	if err := store.EndpointCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizes, rows := qListEndpointSizes, qListEndpoints
	if accountID == "" {
		sizes, rows = qListAllEndpointSizes, qListAllEndpoints
	}
	return readPage(ctx, s, p, sizes, rows, []any{accountID, p.Cursor, string(state)}, sqlrow.ScanEndpoint,
		func(e endpoint.Endpoint) string { return e.ID })
}

// AllEndpoints implements store.EndpointStore, in ID order.
func (s *Store) AllEndpoints(ctx context.Context) ([]endpoint.Endpoint, error) {
	return scanEndpoints(ctx, s.drv.Reader(), qAllEndpoints)
}

// EndpointChanges implements store.EndpointStore in one snapshot.
func (s *Store) EndpointChanges(ctx context.Context, since int64) ([]endpoint.Endpoint, int64, error) {
	var out []endpoint.Endpoint
	var v int64
	err := s.drv.Snapshot(ctx, func(x driver.Executor) error {
		out = nil
		if err := x.QueryRow(ctx, qEndpointsVersion).Scan(&v); err != nil {
			return err
		}
		if since >= v {
			return nil
		}
		var err error
		out, err = scanEndpoints(ctx, x, qChangedEndpoints, since)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("endpoint changes: %w", err)
	}
	return out, v, nil
}

// ModifyEndpoints implements store.EndpointStore in one write transaction:
// it takes the next endpoints version (first, so that every writer of
// endpoints locks the counter before their rows), reads the endpoints
// (qLockEndpoints: on PostgreSQL with SELECT ... FOR UPDATE in ID order, so
// that another node's ModifyEndpoints or TakeProbe on any of them waits
// until this one commits; on SQLite the one writer serialises it with every
// other write), calls fn, and writes back the Health, UpdatedAt and
// RateLimit fn leaves in one statement. Endpoints are passed to fn and
// returned in ID order, each once however often its ID is given; fn's
// changes to ID, URL and CreatedAt are ignored. When no ID is known fn is
// still called (with no endpoints) and nothing is written. fn runs while
// the write transaction is open (on SQLite on the writer goroutine, on
// PostgreSQL with the rows locked and a pooled connection held): it must be
// quick. If the transaction runs again (a deadlock or serialization
// failure on PostgreSQL; on SQLite another request's failure aborting the
// shared transaction), fn is called again with the endpoints read anew, and
// only the last call's result is written.
func (s *Store) ModifyEndpoints(ctx context.Context, ids []string, fn func(eps []*endpoint.Endpoint) error) ([]endpoint.Endpoint, error) {
	if ids == nil {
		ids = []string{} // a NULL list would match nothing too, but say what is meant
	}
	var out []endpoint.Endpoint
	err := s.write(ctx, func(x driver.Executor) error {
		out = nil
		var v int64
		if len(ids) > 0 {
			var err error
			if v, err = bumpEndpoints(ctx, x); err != nil {
				return err
			}
		}
		read, err := scanEndpoints(ctx, x, qLockEndpoints, ids)
		if err != nil {
			return fmt.Errorf("read endpoints: %w", err)
		}
		eps := make([]*endpoint.Endpoint, len(read))
		for i := range read {
			e := read[i]
			eps[i] = &e
		}
		if err := fn(eps); err != nil {
			return err
		}
		if len(eps) == 0 {
			return nil
		}
		out, err = saveHealth(ctx, x, read, eps, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// saveHealth writes the health of eps (as fn left them; read holds them as
// read, for their IDs) at endpoints version v in one statement and returns
// the endpoints as stored, in ID order.
func saveHealth(ctx context.Context, x driver.Executor, read []endpoint.Endpoint, eps []*endpoint.Endpoint, v int64) ([]endpoint.Endpoint, error) {
	rows := make([]sqlrow.HealthRow, len(eps))
	for i, e := range eps {
		var err error
		if rows[i], err = sqlrow.NewHealthRow(read[i].ID, e); err != nil {
			return nil, err
		}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("save endpoint health: %w", err)
	}
	out, err := scanEndpoints(ctx, x, qSaveHealth, v, string(doc))
	if err != nil {
		return nil, fmt.Errorf("save endpoint health: %w", err)
	}
	// UPDATE ... RETURNING has no order.
	slices.SortFunc(out, func(a, b endpoint.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// bumpEndpoints takes the next endpoints version in x's write transaction
// (qBumpEndpoints).
func bumpEndpoints(ctx context.Context, x driver.Executor) (int64, error) {
	var v int64
	if err := x.QueryRow(ctx, qBumpEndpoints).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the endpoints version: %w", err)
	}
	return v, nil
}

// TakeProbe implements store.EndpointStore with one conditional update in
// a write transaction of its own; it does not change the endpoint's
// version. Of concurrent callers for a due probe (with hold after now),
// on any nodes, exactly one changes the row and reports true: SQLite's
// writes are serialised; on PostgreSQL a concurrent caller waits for the
// row and re-checks the condition on the updated version. An unknown
// endpoint reports false.
func (s *Store) TakeProbe(ctx context.Context, endpointID string, now, hold time.Time) (bool, error) {
	var took bool
	err := s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qTakeProbe, endpointID, sqlrow.UnixMS(now), sqlrow.UnixMS(hold))
		took = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("take probe of %s: %w", endpointID, err)
	}
	return took, nil
}

// EndpointID implements store.EndpointStore: the ID of an account's URL,
// derived from the key the database keeps (Options.EndpointKey, read at
// open: the same on every node of a shared store).
func (s *Store) EndpointID(accountID, url string) string {
	return s.opts.EndpointKey.ID(accountID, url)
}

// scanEndpoints runs q on x and reads the endpoints it returns.
func scanEndpoints(ctx context.Context, x driver.Executor, q driver.Query, args ...any) ([]endpoint.Endpoint, error) {
	var out []endpoint.Endpoint
	err := x.Query(ctx, q, func(r driver.Row) error {
		e, err := sqlrow.ScanEndpoint(r)
		if err == nil {
			out = append(out, e)
		}
		return err
	}, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}
