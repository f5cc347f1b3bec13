package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/server"
)

// heavyFilters are the attack battery's filters: 24 StringNotContains on
// data.arr, each testing every element of the array (none contains its
// value, so each passes only after the last).
func heavyFilters() []map[string]any {
	fs := make([]map[string]any, 24)
	for i := range fs {
		fs[i] = map[string]any{"operator_type": "StringNotContains", "key": "data.arr", "values": []string{fmt.Sprint("zz", i)}}
	}
	return fs
}

// heavySubscriptions gives tenant tn n pull subscriptions to type x with
// heavyFilters.
func heavySubscriptions(b *bundle, tn tenant, n int) {
	b.t.Helper()
	for i := range n {
		body := map[string]any{"name": fmt.Sprint("heavy-", i), "delivery_mode": "pull", "event_types": []string{"x"},
			"advanced_filters": heavyFilters()}
		if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", body, nil); code != http.StatusCreated {
			b.t.Fatalf("create heavy subscription: %d %s", code, raw)
		}
	}
}

// arrData is data whose arr holds n strings "a" (4 bytes each in JSON).
func arrData(n int) map[string]any {
	return map[string]any{"arr": slices.Repeat([]string{"a"}, n)}
}

// heavyEvent is a CloudEvent of type x with arrData(n).
func heavyEvent(id string, n int) map[string]any {
	return map[string]any{"specversion": "1.0", "id": id, "source": "/heavy", "type": "x", "data": arrData(n)}
}

// postAs sends body (JSON) with Content-Type ct and these headers, and
// returns the status and the body of the answer.
func postAs(ctx context.Context, b *bundle, path, ct string, header map[string]string, body any) (int, []byte, error) {
	return postWith(ctx, http.DefaultClient, b, path, ct, header, body)
}

// postWith is postAs with this client.
func postWith(ctx context.Context, client *http.Client, b *bundle, path, ct string, header map[string]string, body any) (int, []byte, error) {
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, "POST", b.api.URL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", ct)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// TestMatchWorkLimitOnEveryPublishRoute: with --max-match-work 20,000 and
// a subscription whose filters cost 2 tests an element of data.arr, a
// publish whose matching would pass the limit answers 413 naming the
// limit and the flag, on every publish route and in every format (a
// problem on /v1, Event Grid's error on its routes), and stores nothing:
// the same (source, id) published afterwards with light data is not a
// duplicate and makes its delivery.
func TestMatchWorkLimitOnEveryPublishRoute(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxMatchWork = 20_000 })
	tn := newTenant(b, "shop")
	var sub struct{ ID string }
	if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "orders", "delivery_mode": "pull",
		"event_types": []string{"x"}, "advanced_filters": []map[string]any{
			{"operator_type": "StringNotContains", "key": "data.arr", "values": []string{"p", "q"}}}}, &sub); code != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", code, raw)
	}
	const heavy, medium = 12_000, 6_000 // 24,001 and 12,001 tests an event
	ce := func(id string, n int) map[string]any { return heavyEvent(id, n) }
	eg := func(id string, n int) map[string]any {
		return map[string]any{"id": id, "subject": "s", "eventType": "x", "eventTime": "2026-01-05T09:00:00Z", "data": arrData(n)}
	}
	bearer := map[string]string{"Authorization": "Bearer " + tn.pubKey}
	sas := map[string]string{"aeg-sas-key": tn.pubKey}
	sharedKey := map[string]string{"Authorization": "SharedAccessKey " + tn.pubKey}
	for _, c := range []struct {
		name, path, ct string
		header         map[string]string
		body           func(n int) any // the request at a size of data.arr
		n              int             // the refused request's size
		events         int
		eventGrid      bool // answers in Event Grid's error form
	}{
		{"structured", "/v1/events", "application/cloudevents+json", bearer, func(n int) any { return ce("structured", n) }, heavy, 1, false},
		{"batch", "/v1/events", "application/cloudevents-batch+json", bearer,
			func(n int) any { return []any{ce("batch-1", n), ce("batch-2", n)} }, medium, 2, false},
		{"binary", "/v1/events", "application/json", map[string]string{"Authorization": "Bearer " + tn.pubKey,
			"ce-specversion": "1.0", "ce-id": "binary", "ce-source": "/heavy", "ce-type": "x"},
			func(n int) any { return arrData(n) }, heavy, 1, false},
		{"Event Grid schema on /v1/events", "/v1/events", "application/json", bearer,
			func(n int) any { return []any{eg("eg-v1", n)} }, heavy, 1, false},
		{"Event Grid topic", "/api/events", "application/json", sas,
			func(n int) any { return []any{eg("eg-1", n), eg("eg-2", n)} }, medium, 2, true},
		{"Event Grid topic, CloudEvents", "/api/events", "application/cloudevents+json", sas,
			func(n int) any { return ce("eg-ce", n) }, heavy, 1, true},
		{"namespace topic", "/topics/shop:publish", "application/cloudevents+json", sharedKey,
			func(n int) any { return ce("ns", n) }, heavy, 1, true},
	} {
		before := len(deliveriesAs(b, tn.accountKey, sub.ID))
		code, raw, err := postAs(context.Background(), b, c.path, c.ct, c.header, c.body(c.n))
		if err != nil {
			t.Fatal(err)
		}
		var msg string
		if c.eventGrid {
			var e struct {
				Error struct{ Code, Message string }
			}
			_ = json.Unmarshal(raw, &e)
			if e.Error.Code != "RequestEntityTooLarge" {
				t.Errorf("%s: %d %s; want Event Grid's error RequestEntityTooLarge", c.name, code, raw)
			}
			msg = e.Error.Message
		} else {
			var p struct{ Type, Detail string }
			_ = json.Unmarshal(raw, &p)
			if p.Type != "urn:herald:problem:payload-too-large" {
				t.Errorf("%s: %d %s; want a payload-too-large problem", c.name, code, raw)
			}
			msg = p.Detail
		}
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "20000 filter tests") || !strings.Contains(msg, "--max-match-work") {
			t.Errorf("%s: %d %s; want 413 naming 20000 filter tests and --max-match-work", c.name, code, raw)
			continue
		}
		// Nothing was stored: the same events, light, are new.
		if code, raw, err := postAs(context.Background(), b, c.path, c.ct, c.header, c.body(1)); err != nil || code >= 300 {
			t.Fatalf("%s, light: %d %s %v", c.name, code, raw, err)
		}
		if got := len(deliveriesAs(b, tn.accountKey, sub.ID)) - before; got != c.events {
			t.Errorf("%s: the light publish of the refused events made %d deliveries; want %d (they were stored, and are duplicates now)",
				c.name, got, c.events)
		}
	}
}

// TestHeavyMatchingStopsWhenTheClientGoes: with no match budget, a
// publish whose matching would cost 31 million filter tests (the attack
// battery's filters, on a 128 KB array) stops within a few thousand tests
// of its client's going, and nothing is stored.
func TestHeavyMatchingStopsWhenTheClientGoes(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxMatchWork = 0 })
	tn := newTenant(b, "a")
	const subs, n = 40, 32 << 10
	heavySubscriptions(b, tn, subs)
	in := b.srv.Pipeline.Admission
	in.TestSignals.MatchStopped.Init(t)
	in.Gate.TestSignals.Took.Init(t)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := postAs(ctx, b, "/v1/events", "application/cloudevents+json",
			map[string]string{"Authorization": "Bearer " + tn.pubKey}, heavyEvent("e1", n))
		done <- err
	}()
	in.Gate.TestSignals.Took.WaitOrTimeout() // matching is under way, and heavy
	cancel()
	stop := in.TestSignals.MatchStopped.WaitOrTimeout()
	total := subs * (1 + 24*n)
	t.Logf("stopped after %d of %d filter tests: %v", stop.Tested, total, stop.Err)
	if !errors.Is(stop.Err, context.Canceled) || stop.Tested >= total/2 {
		t.Fatalf("matching stopped with %v after %d of %d tests; want context.Canceled long before the end", stop.Err, stop.Tested, total)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request ended with %v", err)
	}
	var list struct{ Data []any }
	if code, raw := b.doAs(tn.accountKey, "GET", "/v1/deliveries?limit=1", nil, &list); code != http.StatusOK || len(list.Data) != 0 {
		t.Fatalf("deliveries after the abandoned publish: %d %s; want none", code, raw)
	}
}

// TestHeavyMatchingStopsAtTheDeadline: with no match budget and a publish
// deadline of 1 s, a publish whose matching would cost 1.6 billion filter
// tests (1,000 subscriptions with the attack battery's filters, a 256 KB
// array: half a minute of a core without -race) answers 503 saying it ran
// out of time, and its matching stopped at the deadline, long before its
// end.
func TestHeavyMatchingStopsAtTheDeadline(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxMatchWork = 0 })
	tn := newTenant(b, "a")
	const subs, n = 1000, 64 << 10
	filters, err := json.Marshal(heavyFilters())
	if err != nil {
		t.Fatal(err)
	}
	createFanout(t, b, tn.id, subs, filters)
	in := b.srv.Pipeline.Admission
	in.TestSignals.MatchStopped.Init(t)
	b.srv.API.PublishTimeout = time.Second

	code, raw, err := postAs(context.Background(), b, "/v1/events", "application/cloudevents+json",
		map[string]string{"Authorization": "Bearer " + tn.pubKey}, heavyEvent("e1", n))
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(string(raw), "did not finish within 1s") {
		t.Fatalf("publish past its deadline: %d %s; want 503 saying it did not finish within 1s", code, raw)
	}
	stop := in.TestSignals.MatchStopped.WaitOrTimeout()
	total := subs * (1 + 24*n)
	t.Logf("stopped after %d of %d filter tests: %v", stop.Tested, total, stop.Err)
	if !errors.Is(stop.Err, context.DeadlineExceeded) || stop.Tested >= total/2 {
		t.Fatalf("matching stopped with %v after %d of %d tests; want context.DeadlineExceeded long before the end", stop.Err, stop.Tested, total)
	}
}

// TestHeavyPublishesOfOneTenantLeaveAnothersP50 (one tenant's heavy
// publishes do not slow another's): tenant A has 40 subscriptions with the
// attack battery's filters and publishes, from 4 clients at once, 128 KB
// events whose matching passes --max-match-work (each refused 413 after
// 10 million filter tests), while tenant B publishes small events one at a
// time. B's publish p50 while A publishes is at most twice its p50 alone:
// measured in 10 rounds of 12 publishes alone then 12 under A's load, so
// that a machine whose load changes during the test moves both alike. A
// round's publishes under load begin when A's load runs (the gate's Took
// signal, then A's 4 requests at the gate, running or waiting for a turn)
// and end before it stops; heavy matching must have run during a tenth of
// them at least (the gate's count of tests spent in turns moved: it gives
// way to B's publishes, but not all the way). Before, A's matching ran on
// every core at once and B's publishes waited behind it in the Go
// scheduler's run queue: its p50 rose more than 20 times under -race.
func TestHeavyPublishesOfOneTenantLeaveAnothersP50(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: rounds of 4 heavy publishers")
	}
	b := setup(t)
	a, other := newTenant(b, "a"), newTenant(b, "b")
	heavySubscriptions(b, a, 40)
	if code, raw := b.doAs(other.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "b", "delivery_mode": "pull",
		"event_types": []string{"y"}, "advanced_filters": []map[string]any{
			{"operator_type": "StringIn", "key": "data.k", "values": []string{"v"}}}}, nil); code != http.StatusCreated {
		t.Fatalf("B's subscription: %d %s", code, raw)
	}
	gate := b.srv.Pipeline.Admission.Gate
	gate.TestSignals.Took.Init(t)

	nB := 0
	publishB := func() time.Duration {
		nB++
		ev := map[string]any{"specversion": "1.0", "id": fmt.Sprint("b-", nB), "source": "/b", "type": "y", "data": map[string]any{"k": "v"}}
		start := time.Now()
		code, raw := b.doAs(other.pubKey, "POST", "/v1/events", ev, nil)
		took := time.Since(start)
		if code != http.StatusAccepted {
			t.Fatalf("B's publish: %d %s", code, raw)
		}
		return took
	}
	for range 20 { // warm up
		publishB()
	}
	const rounds, perRound = 10, 12
	var alone, loaded []time.Duration
	overlapped, work := 0, int64(0)
	for round := range rounds {
		for range perRound {
			alone = append(alone, publishB())
		}
		stop := heavyLoad(b, a, round)
		start := gate.Work()
		for range perRound {
			w := gate.Work()
			loaded = append(loaded, publishB())
			if gate.Work() > w {
				overlapped++
			}
		}
		work += gate.Work() - start
		stop()
	}
	// Heavy matching gives way to B's publishes, but not all the way.
	if work < filter.HeavyAfter || overlapped < len(loaded)/10 {
		t.Fatalf("heavy matching ran during %d of B's %d publishes under load (%d tests): A's load is not running", overlapped, len(loaded), work)
	}
	slices.Sort(alone)
	slices.Sort(loaded)
	p50Alone, p50Loaded := alone[len(alone)/2], loaded[len(loaded)/2]
	ratio := float64(p50Loaded) / float64(p50Alone)
	t.Logf("B's publish p50: %v alone, %v while A published heavy events (%.2f×; p90 %v and %v; heavy matching ran during %d of %d)",
		p50Alone, p50Loaded, ratio, alone[len(alone)*9/10], loaded[len(loaded)*9/10], overlapped, len(loaded))
	if ratio > 2 {
		t.Errorf("B's publish p50 rose %.2f× (%v → %v) while A published heavy events; want at most 2×", ratio, p50Alone, p50Loaded)
	}
}

// heavyClients is how many clients heavyLoad publishes from.
const heavyClients = 4

// heavyLoad starts 4 clients (on connections of their own) publishing,
// one request at a time each, heavy events of tenant a (128 KB, the attack
// battery's size) until the returned stop is called, and returns once
// heavy matching runs (the gate's Took signal) and all 4 requests are at
// the gate (running or waiting for a turn: their bodies read and parsed).
// Every answer must be 413 (past --max-match-work). stop cancels the
// requests in flight, waits for the clients, and for the server's
// matching of them to end.
func heavyLoad(b *bundle, a tenant, round int) (stop func()) {
	t := b.t
	gate := b.srv.Pipeline.Admission.Gate
	for len(gate.TestSignals.Took.C()) > 0 { // the last round's
		<-gate.TestSignals.Took.C()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: heavyClients}}
	// One body for all: refused, it is never stored, so never a duplicate.
	body, err := json.Marshal(heavyEvent(fmt.Sprint("a-", round), 32<<10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range heavyClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				code, raw, err := postWith(ctx, client, b, "/v1/events", "application/cloudevents+json",
					map[string]string{"Authorization": "Bearer " + a.pubKey}, body)
				if err == nil && code != http.StatusRequestEntityTooLarge {
					t.Errorf("A's heavy publish: %d %.300s; want 413", code, raw)
					return
				}
			}
		}()
	}
	gate.TestSignals.Took.WaitOrTimeout()
	eventually(t, "A's 4 requests at the gate", func() bool { return gate.Running()+gate.Waiting() == heavyClients })
	return func() {
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		// No turn held, and no test spent under the gate between two
		// looks (a turn is handed over between them, never held that long).
		last := gate.Work()
		eventually(t, "the heavy matching to end", func() bool {
			w := gate.Work()
			idle := gate.Running() == 0 && w == last
			last = w
			return idle
		})
	}
}
