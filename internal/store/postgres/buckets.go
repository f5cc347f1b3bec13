package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/store"
)

// refilled is the tokens in bucket b once refilled at the limit proposed in
// EXCLUDED (the endpoint's, read in the same statement) for the time since
// its last take, capped at the burst.
const refilled = `LEAST(EXCLUDED.burst, b.tokens + EXCLUDED.per_second *
	GREATEST(0, EXTRACT(EPOCH FROM EXCLUDED.updated_at - b.updated_at)))`

// takeTokensSQL takes tokens from the buckets of limited endpoints in one
// statement. A bucket not yet made starts full. An existing one is locked
// by ON CONFLICT DO UPDATE, whose SET reads the row's latest version, so
// two nodes' takes never grant the same token. The clock is the database's
// (statement_timestamp), never moved back (GREATEST), so nodes' clocks do
// not matter. The proposed row carries the endpoint's limit and the want
// for the update to read (they are not stored apart from per_second,
// burst: rewritten with each take).
const takeTokensSQL = `INSERT INTO endpoint_buckets AS b (endpoint_id, tokens, granted, updated_at, per_second, burst, want)
SELECT e.id, e.rate_burst - LEAST(w.want, e.rate_burst), LEAST(w.want, e.rate_burst), statement_timestamp(),
	e.rate_per_second, e.rate_burst, w.want
FROM unnest($1::text[], $2::int4[]) AS w(id, want) JOIN endpoints e ON e.id = w.id
WHERE e.rate_per_second > 0
ORDER BY e.id
ON CONFLICT (endpoint_id) DO UPDATE SET
	granted = LEAST(EXCLUDED.want, floor(` + refilled + `)::int4),
	tokens = ` + refilled + ` - LEAST(EXCLUDED.want, floor(` + refilled + `)::int4),
	updated_at = GREATEST(b.updated_at, EXCLUDED.updated_at),
	per_second = EXCLUDED.per_second, burst = EXCLUDED.burst, want = EXCLUDED.want
RETURNING b.endpoint_id, b.granted, b.tokens`

// TakeTokens implements store.SharedBuckets with one statement
// (takeTokensSQL), retried on a deadlock.
func (s *backend) TakeTokens(ctx context.Context, wants []store.TokenWant) ([]store.TokenGrant, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	wants = slices.Clone(wants)
	slices.SortFunc(wants, func(a, b store.TokenWant) int { return strings.Compare(a.EndpointID, b.EndpointID) })
	wants = slices.CompactFunc(wants, func(a, b store.TokenWant) bool { return a.EndpointID == b.EndpointID })
	ids, ns := make([]string, len(wants)), make([]int32, len(wants))
	for i, w := range wants {
		ids[i], ns[i] = w.EndpointID, int32(max(0, w.Want))
	}
	var out []store.TokenGrant
	err := s.retrying(ctx, func() error {
		var err error
		out, err = queryAll(ctx, s, func(r scanner) (store.TokenGrant, error) {
			var g store.TokenGrant
			err := r.Scan(&g.EndpointID, &g.Granted, &g.Left)
			return g, err
		}, takeTokensSQL, ids, ns)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("take tokens of %d endpoints: %w", len(ids), s.err(err))
	}
	return out, nil
}
