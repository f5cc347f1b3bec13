package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/server/servertest"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// start is the fake clock's starting time in engine tests.
var start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// bundle is one Herald process on a fake clock and a real SQLite file, with
// its API on a real loopback HTTP server. Its methods, all in this file, are
// what most tests need: waiting for the engine (asleep, settle), calling the
// API (do, doAs, send) and the common resources (subscribe, publish,
// deliveries, attempts, endpoints, state, opsReceiver). A helper for one
// topic is a function taking the bundle, in that topic's file (newTenant in
// auth_test.go, refuseAll in input_test.go, receive in queue_test.go, …).
type bundle struct {
	t   *testing.T
	cfg server.Config
	clk *clock.Fake // nil when a tune gave the server the wall clock
	srv *server.Server
	// loops follows the server's loops (nil with the wall clock).
	loops *loopWatch
	api   *httptest.Server
	// client sends adminKey with every request that carries no
	// Authorization header of its own.
	client *http.Client
}

// adminKey is the engine tests' HERALD_ADMIN_KEY.
const adminKey = "test-admin-key-0123456789abcdef"

// keyTransport sets a bearer key on requests without an Authorization
// header.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// keyClient returns a client that sends key (see keyTransport).
func keyClient(key string) *http.Client { return &http.Client{Transport: keyTransport{key}} }

func setup(t *testing.T, tune ...func(*server.Config)) *bundle {
	t.Helper()
	clk := clock.NewFake(start)
	cfg := server.Config{
		DataDir:  t.TempDir(),
		Clock:    clk,
		Version:  "test",
		AdminKey: adminKey,
		// The default budget, so that every test's publishes show it is
		// far above ordinary traffic.
		MaxMatchWork:  server.DefaultMaxMatchWork,
		MaxSchemaWork: server.DefaultMaxSchemaWork,
		Attempting: attempting.Config{
			Rand: func() float64 { return 0.5 }, // no jitter
			// The receivers are loopback servers (httptest).
			Destinations: destination.Policy{AllowPrivate: true},
			// No test asks the network's DNS: a name is not found unless a
			// test answers it (see dns, in destination_test.go).
			Resolver: newDNS(),
		},
	}
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		// The engine tests run on both stores: CI runs this package a second
		// time with HERALD_TEST_STORE=postgres.
		cfg.Store = pgtest.SchemaURL(t)
	}
	if os.Getenv("HERALD_TEST_LOG") != "" {
		// The process's log on stderr, to see why a test hangs.
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		// Kept, and shown (its end) only when the test fails.
		logs := &logBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		t.Cleanup(func() {
			if t.Failed() {
				out := logs.String()
				t.Logf("the server's log (its last 16 KiB):\n%s", out[max(0, len(out)-16<<10):])
			}
		})
	}
	for _, f := range tune {
		f(&cfg)
	}
	clk, _ = cfg.Clock.(*clock.Fake) // a tune may bring its own; nil for the wall clock
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var loops *loopWatch
	if clk != nil {
		loops = watchLoops(t, srv.Loops()) // before Start: see watchLoops
	}
	api := servertest.Serve(t, srv)
	b := &bundle{t: t, cfg: cfg, clk: clk, srv: srv, api: api, client: keyClient(adminKey), loops: loops}
	if clk != nil {
		// A test's first clock move must not come before a loop's first
		// sleep: that loop would sleep past it.
		eventually(t, "every loop of the server asleep", b.asleep)
	}
	return b
}

// asleep reports whether every loop of the server (Server.Loops) sleeps
// until a time after the fake clock's now: each has done everything the
// clock allowed so far, and a clock move from now on reaches each.
func (b *bundle) asleep() bool { return b.loops.asleep(b.clk.Now()) }

// settle waits until the engine has no attempt in flight or waiting for its
// outcome's commit, and the server's loops (Server.Loops) all sleep until
// after the fake clock's now, so that whatever the last clock move allowed
// has happened.
func (b *bundle) settle() {
	b.t.Helper()
	eventually(b.t, "the engine to settle", func() bool {
		st := b.srv.Pipeline.Scheduler.Stats()
		// Held counts a delivery until its outcome is committed.
		return st.InFlight == 0 && st.FreshHeld+st.LoadHeld == 0 && b.asleep()
	})
}

// loopWatch follows loops through their test signals (startstop.Loop's
// Slept and Woke), which a goroutine per loop reads as they come.
type loopWatch struct {
	mu     sync.Mutex
	states []loopState // by the loop's index
}

// loopState is what a loop's signals said so far. They alternate (Slept,
// Woke, Slept, …) but arrive on two channels, so they are counted: the loop
// sleeps when one more Slept than Woke came.
type loopState struct {
	slept, woke int
	until       time.Time // of the last Slept
}

// watchLoops turns the loops' signals on and reads them until the test
// ends. Call it before the loops start (testsignal.Signal.Init).
func watchLoops(t *testing.T, loops []*startstop.Loop) *loopWatch {
	w := &loopWatch{states: make([]loopState, len(loops))}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, l := range loops {
		sig := &l.TestSignals
		sig.Slept.Init(t)
		sig.Woke.Init(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case until := <-sig.Slept.C():
					w.mu.Lock()
					w.states[i].slept++
					w.states[i].until = until
					w.mu.Unlock()
				case <-sig.Woke.C():
					w.mu.Lock()
					w.states[i].woke++
					w.mu.Unlock()
				case <-done:
					return
				}
			}
		}()
	}
	// Registered before the server's Close, so it runs after it.
	t.Cleanup(func() {
		close(done)
		wg.Wait()
	})
	return w
}

// asleep reports whether every loop sleeps until after now.
func (w *loopWatch) asleep(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.states {
		if st.slept != st.woke+1 || !st.until.After(now) {
			return false
		}
	}
	return true
}

// do sends a JSON request to the API and decodes the answer into out (when
// not nil). It returns the status code and the raw body.
func (b *bundle) do(method, path string, in any, out any) (int, []byte) {
	b.t.Helper()
	return b.doAs(adminKey, method, path, in, out)
}

// doAs is do with another API key ("" sends none).
func (b *bundle) doAs(key, method, path string, in any, out any) (int, []byte) {
	b.t.Helper()
	var body io.Reader
	if in != nil {
		raw, ok := in.([]byte)
		if !ok {
			var err error
			raw, err = json.Marshal(in)
			if err != nil {
				b.t.Fatal(err)
			}
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.api.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s %s: decoding %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, raw
}

// send sends a request with these headers and body (none when "") and
// returns the answer with its body read.
func (b *bundle) send(method, path string, header map[string]string, body string) (*http.Response, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.api.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// subscribe creates a subscription and returns its ID.
func (b *bundle) subscribe(body map[string]any) string {
	b.t.Helper()
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", body, &sub); code != http.StatusCreated {
		b.t.Fatalf("create subscription: %d %s", code, raw)
	}
	return sub.ID
}

// publish publishes one CloudEvent with this id and type.
func (b *bundle) publish(id, typ string) {
	b.t.Helper()
	ev := map[string]any{"specversion": "1.0", "id": id, "source": "/test", "type": typ, "data": map[string]any{"n": id}}
	if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		b.t.Fatalf("publish: %d %s", code, raw)
	}
}

// delivery is the API's delivery resource, as tests read it.
type delivery struct {
	ID               string     `json:"id"`
	SubscriptionID   string     `json:"subscription_id"`
	EventID          string     `json:"event_id"`
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
	LastStatusCode   *int       `json:"last_status_code"`
	LastOutcome      *string    `json:"last_outcome"`
	DeadLetterReason *string    `json:"dead_letter_reason"`
}

type attempt struct {
	Number       int       `json:"number"`
	StartedAt    time.Time `json:"started_at"`
	StatusCode   *int      `json:"status_code"`
	Outcome      string    `json:"outcome"`
	Error        *string   `json:"error"`
	ResponseBody string    `json:"response_body"`
}

// deliveries lists a subscription's deliveries.
func (b *bundle) deliveries(subID string) []delivery {
	b.t.Helper()
	var out struct{ Data []delivery }
	if code, raw := b.do("GET", "/v1/deliveries?limit=1000&subscription_id="+subID, nil, &out); code != 200 {
		b.t.Fatalf("list deliveries: %d %s", code, raw)
	}
	return out.Data
}

// only returns the single delivery of a subscription.
func (b *bundle) only(subID string) delivery {
	b.t.Helper()
	ds := b.deliveries(subID)
	if len(ds) != 1 {
		b.t.Fatalf("want 1 delivery, have %d", len(ds))
	}
	return ds[0]
}

// attempts lists a delivery's attempts.
func (b *bundle) attempts(deliveryID string) []attempt {
	b.t.Helper()
	var out struct{ Data []attempt }
	if code, raw := b.do("GET", "/v1/deliveries/"+deliveryID+"/attempts?limit=1000", nil, &out); code != 200 {
		b.t.Fatalf("list attempts: %d %s", code, raw)
	}
	return out.Data
}

// waitDelivery waits until the subscription's single delivery satisfies ok
// (checked on a short ticker) and returns it.
func (b *bundle) waitDelivery(subID string, what string, ok func(delivery) bool) delivery {
	b.t.Helper()
	var last delivery
	eventually(b.t, what, func() bool {
		ds := b.deliveries(subID)
		if len(ds) != 1 {
			return false
		}
		last = ds[0]
		return ok(last)
	})
	return last
}

// state is what the API shows of everything a request could change, once
// the engine is idle: to check that a refused request changed nothing.
func (b *bundle) state() string {
	b.t.Helper()
	b.settle()
	var all []byte
	for _, p := range []string{"/v1/subscriptions", "/v1/deliveries", "/v1/dead-letters", "/v1/endpoints"} {
		code, raw := b.do("GET", p+"?limit=1000", nil, nil)
		if code != http.StatusOK {
			b.t.Fatalf("GET %s: %d %s", p, code, raw)
		}
		all = append(all, raw...)
	}
	return string(all)
}

// endpointRes is the API's endpoint resource, as tests read it.
type endpointRes struct {
	ID                  string     `json:"id"`
	URL                 string     `json:"url"`
	State               string     `json:"state"`
	StateReason         *string    `json:"state_reason"`
	FrozenAt            *time.Time `json:"frozen_at"`
	UpdatedAt           *time.Time `json:"updated_at"`
	ConsecutiveFailures int64      `json:"consecutive_failures"`
	NextProbeAt         *time.Time `json:"next_probe_at"`
	ProbationDelay      *string    `json:"probation_delay"`
	ConcurrencyLimit    *int       `json:"concurrency_limit"`
}

// endpoint reads an endpoint.
func (b *bundle) endpoint(id string) endpointRes {
	b.t.Helper()
	var ep endpointRes
	if code, raw := b.do("GET", "/v1/endpoints/"+id, nil, &ep); code != 200 {
		b.t.Fatalf("get endpoint: %d %s", code, raw)
	}
	return ep
}

// endpointOf returns the id of a subscription's endpoint.
func (b *bundle) endpointOf(subID string) string {
	b.t.Helper()
	var sub struct {
		EndpointID string `json:"endpoint_id"`
	}
	b.do("GET", "/v1/subscriptions/"+subID, nil, &sub)
	return sub.EndpointID
}

// stallBound is how long a wait (eventually, eventuallyProgressing) goes
// without progress before it fails the test: generous, since CI runs
// packages side by side under the race detector.
const stallBound = 90 * time.Second

// eventually waits for cond, checking it every few milliseconds, and fails
// the test after stallBound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyProgressing(t, what, func() (int, bool) { return 0, cond() })
}

// eventuallyProgressing waits for a piece of work of many steps (thousands
// of attempts, a backlog draining), checking every few milliseconds:
// check returns a count that moves as the work goes on and whether it is
// done. It fails the test once the count has not moved for stallBound, so
// the wait is bounded by the work's progress, not by a total time a loaded
// machine can exceed while the work goes on; a wait whose work is stuck
// still fails. Its whole length is at most stallBound per change of the
// count.
func eventuallyProgressing(t *testing.T, what string, check func() (n int, done bool)) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, done := check()
	for moved := time.Now(); !done; {
		if time.Since(moved) > stallBound {
			t.Fatalf("timed out waiting for %s (at %d, unchanged for %v)", what, last, stallBound)
		}
		<-tick.C
		var n int
		if n, done = check(); n != last {
			last, moved = n, time.Now()
		}
	}
}

// receiver is a real HTTP endpoint on loopback that records what it gets
// and answers as told.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, r *http.Request, w http.ResponseWriter) // n is 1-based
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answer func(n int, r *http.Request, w http.ResponseWriter)) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		n := len(rc.got)
		rc.mu.Unlock()
		rc.answer(n, r, w)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// status answers every request with code.
func status(code int) func(int, *http.Request, http.ResponseWriter) {
	return func(_ int, _ *http.Request, w http.ResponseWriter) { w.WriteHeader(code) }
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func (rc *receiver) request(i int) received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[i]
}

// opsReceiver subscribes a receiver to Herald's operational events and
// returns it; its bodies are CloudEvents.
func (b *bundle) opsReceiver(types ...string) *receiver {
	rc := newReceiver(b.t, status(200))
	b.subscribe(map[string]any{"name": "ops", "url": rc.URL, "event_types": types})
	return rc
}

// opsEvents decodes what an operations receiver got.
func opsEvents(t *testing.T, rc *receiver) []map[string]any {
	var out []map[string]any
	for i := 0; i < rc.count(); i++ {
		var ev map[string]any
		if err := json.Unmarshal(rc.request(i).body, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

var _ = fmt.Sprintf
