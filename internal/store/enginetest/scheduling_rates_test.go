package enginetest

import (
	"context"
	"sync"
	"testing"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
)

// sharedBuckets is what a store shared between processes offers for rate
// limits (scheduling.SharedBuckets).
type sharedBuckets interface {
	TakeTokens(ctx context.Context, wants []store.TokenWant) ([]store.TokenGrant, error)
}

// testRateLimitRoundTrip: ModifyEndpoints writes the rate limit at a new
// endpoint version (EndpointChanges reports it), every read returns it, a
// health write that leaves it keeps it, and nil removes it.
func testRateLimitRoundTrip(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	if e := readEndpoint(b, a.EndpointID); e.RateLimit != nil {
		t.Fatalf("a new endpoint has the rate limit %+v; want none", e.RateLimit)
	}
	_, v0, err := b.s.EndpointChanges(b.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := endpoint.RateLimit{PerSecond: 0.25, Burst: 3}
	out := modify(b, []string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].RateLimit = &want
		return nil
	})
	if len(out) != 1 || out[0].RateLimit == nil || *out[0].RateLimit != want {
		t.Fatalf("ModifyEndpoints returned %+v; want the rate limit %+v", out, want)
	}
	eps, _, err := b.s.EndpointChanges(b.ctx, v0)
	if err != nil || len(eps) != 1 || eps[0].RateLimit == nil || *eps[0].RateLimit != want {
		t.Fatalf("EndpointChanges after setting a rate limit: %+v, %v", eps, err)
	}
	all, err := b.s.AllEndpoints(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if (e.ID == a.EndpointID) != (e.RateLimit != nil) {
			t.Fatalf("AllEndpoints: %s has the rate limit %+v", e.ID, e.RateLimit)
		}
	}
	page, _, err := b.s.ListEndpoints(b.ctx, a.AccountID, "", store.Page{Limit: 10})
	if err != nil || len(page) != 2 {
		t.Fatalf("ListEndpoints: %+v, %v", page, err)
	}
	// A health write keeps the limit it read.
	modify(b, []string{a.EndpointID, c.EndpointID}, func(eps []*endpoint.Endpoint) error {
		for _, e := range eps {
			e.Health.ConsecutiveFailures++
		}
		return nil
	})
	if e := readEndpoint(b, a.EndpointID); e.RateLimit == nil || *e.RateLimit != want {
		t.Fatalf("after a health write the rate limit is %+v; want %+v", e.RateLimit, want)
	}
	modify(b, []string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].RateLimit = nil
		return nil
	})
	if e := readEndpoint(b, a.EndpointID); e.RateLimit != nil {
		t.Fatalf("after removing it the rate limit is %+v", e.RateLimit)
	}
}

// testSharedBuckets (stores shared between processes): TakeTokens grants a
// new bucket's burst and no more, leaves out endpoints without a limit,
// and concurrent takes never grant more than the bucket holds.
func testSharedBuckets(t *testing.T, b *bundle) {
	sb, ok := b.s.(sharedBuckets)
	if !b.s.Capabilities().Shared {
		if ok {
			t.Fatal("a store of one process implements SharedBuckets: the scheduler would not use it")
		}
		t.Skip("the store is one process's: buckets are kept in memory")
	}
	if !ok {
		t.Fatal("a shared store does not implement TakeTokens")
	}
	a, free := b.sub("https://a.example/hook"), b.sub("https://free.example/hook")
	// 0.01 a second: nothing refills during the test.
	modify(b, []string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].RateLimit = &endpoint.RateLimit{PerSecond: 0.01, Burst: 40}
		return nil
	})
	got, err := sb.TakeTokens(b.ctx, []store.TokenWant{{EndpointID: a.EndpointID, Want: 5}, {EndpointID: free.EndpointID, Want: 5}, {EndpointID: "ep_unknown", Want: 5}})
	if err != nil || len(got) != 1 || got[0].EndpointID != a.EndpointID || got[0].Granted != 5 || got[0].Left < 35 || got[0].Left > 35.1 {
		t.Fatalf("first take: %+v, %v; want 5 tokens of a, 35 left", got, err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				g, err := sb.TakeTokens(b.ctx, []store.TokenWant{{EndpointID: a.EndpointID, Want: 2}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, x := range g {
					total += x.Granted
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 35 {
		t.Fatalf("48 concurrent takes of 2 from 35 tokens granted %d; want 35", total)
	}
	// A lower burst caps what is left.
	modify(b, []string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].RateLimit = &endpoint.RateLimit{PerSecond: 10_000, Burst: 2}
		return nil
	})
	if got, err := sb.TakeTokens(b.ctx, []store.TokenWant{{EndpointID: a.EndpointID, Want: 10}}); err != nil || len(got) != 1 || got[0].Granted > 2 {
		t.Fatalf("take under a burst of 2: %+v, %v", got, err)
	}
}
