package enginetest

import (
	"context"
	"testing"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// RateLimitsFrom is the schema version before the one that gave endpoints
// their rate limits (0016_rate_limits.sql):
// RunUpgrades opens RateLimitsData written at it.
const RateLimitsFrom = 15

// RateLimitsData is PortalSessionsData and an endpoint with its health,
// written at schema version RateLimitsFrom.
const RateLimitsData = PortalSessionsData + `
INSERT INTO endpoints (id, account_id, url, state, consecutive_failures, disabled_at, next_probe_at, created_at, version)
VALUES ('ep_00000000000000000rate', 'acc_000000000000000000000sess', 'https://rate.example/hook', 'disabled', 4,
	1767603600000, 1767604200000, 1767603600000, 1);
UPDATE counters SET value = 1 WHERE name = 'endpoints';
`

// CheckRateLimitsUpgrade checks a store opened on a database at
// RateLimitsFrom holding RateLimitsData: the endpoint keeps its health and
// has no rate limit; one set after the upgrade is kept and reported as a
// change, and on a shared store its bucket hands out the burst.
func CheckRateLimitsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	const id = "ep_00000000000000000rate"
	e, err := s.GetEndpoint(ctx, id)
	if err != nil || e.Health.State != health.Disabled || e.Health.ConsecutiveFailures != 4 || e.RateLimit != nil {
		t.Fatalf("endpoint after the upgrade: %+v, %v; want it disabled after 4 failures, with no rate limit", e, err)
	}
	want := endpoint.RateLimit{PerSecond: 0.5, Burst: 2}
	if _, err := s.ModifyEndpoints(ctx, []string{id}, func(eps []*endpoint.Endpoint) error {
		eps[0].RateLimit = &want
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eps, _, err := s.EndpointChanges(ctx, 1)
	if err != nil || len(eps) != 1 || eps[0].RateLimit == nil || *eps[0].RateLimit != want || eps[0].Health.State != health.Disabled {
		t.Fatalf("EndpointChanges after setting a rate limit: %+v, %v", eps, err)
	}
	if sb, ok := s.(sharedBuckets); ok {
		got, err := sb.TakeTokens(ctx, []store.TokenWant{{EndpointID: id, Want: 5}})
		if err != nil || len(got) != 1 || got[0].Granted != 2 {
			t.Fatalf("TakeTokens after the upgrade: %+v, %v; want the burst of 2", got, err)
		}
	}
}
