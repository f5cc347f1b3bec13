package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// An endpoint row lives while a subscription uses its URL, as its URL or as
// its dead-letter URL: a subscription write creates it (at a new endpoints
// version, so that a reader holding the health of an earlier row with that
// ID adopts the fresh one) and deletes it with the last subscription that
// used it either way. Subscription writes are serialised by the catalog
// lock, so no other one creates or deletes an endpoint row meanwhile; one
// that creates a row takes the endpoints version before it writes the row,
// in the order ModifyEndpoints takes them.
var (
	// qEndpointExists reads 1 when endpoint $1 has a row.
	qEndpointExists = query("EndpointExists")
	// qInsertEndpoint creates the row of endpoint $1 of account $2 and URL
	// $3, created at $4, at endpoints version $5, with fresh health.
	qInsertEndpoint = query("InsertEndpoint")
	// qDeleteUnusedEndpoint deletes the row of endpoint $1 unless a
	// subscription uses it, as its URL's or its dead-letter URL's.
	qDeleteUnusedEndpoint = query("DeleteUnusedEndpoint")
)

// insertEndpoints creates the endpoint rows of sub's URL and dead-letter
// URL in sub's account (both filled in: subscriptionArgs) unless they
// exist. A pull subscription (EndpointID "") has none.
func (s *Store) insertEndpoints(ctx context.Context, x driver.Executor, sub *subscription.Subscription) error {
	if err := s.insertEndpoint(ctx, x, sub.EndpointID, sub.URL, sub); err != nil {
		return err
	}
	return s.insertEndpoint(ctx, x, sub.DeadLetterEndpointID, sub.Delivery.DeadLetterURL, sub)
}

// insertEndpoint creates the endpoint row id of url, in sub's account,
// unless it exists ("" names none).
func (s *Store) insertEndpoint(ctx context.Context, x driver.Executor, id, url string, sub *subscription.Subscription) error {
	if id == "" {
		return nil
	}
	var one int
	switch err := x.QueryRow(ctx, qEndpointExists, id).Scan(&one); {
	case err == nil:
		return nil
	case !errors.Is(err, driver.ErrNoRows):
		return fmt.Errorf("read endpoint %s: %w", id, err)
	}
	v, err := bumpEndpoints(ctx, x)
	if err != nil {
		return err
	}
	if _, err := x.Exec(ctx, qInsertEndpoint, id, sub.AccountID, url, sqlrow.UnixMS(sub.UpdatedAt), v); err != nil {
		return fmt.Errorf("insert endpoint %s: %w", id, err)
	}
	return nil
}

// deleteUnusedEndpoints deletes the row of each endpoint of ids that no
// subscription uses any more, as its URL's or its dead-letter URL's; ""
// (a pull subscription's, or no dead-letter URL) names none.
func deleteUnusedEndpoints(ctx context.Context, x driver.Executor, ids ...string) error {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, err := x.Exec(ctx, qDeleteUnusedEndpoint, id); err != nil {
			return fmt.Errorf("delete unused endpoint %s: %w", id, err)
		}
	}
	return nil
}
