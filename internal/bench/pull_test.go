package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeQueue serves receive and acknowledge for one subscription like
// Herald's API, from an in-memory queue of events prefix+0 … prefix+(n−1).
// Delivery 5's first acknowledgement is refused (its lock "was lost") and it
// is queued again; delivery 7 is handed out twice (its lock "expired").
type fakeQueue struct {
	t      *testing.T
	prefix string
	sent   int64

	mu       sync.Mutex
	queue    []int
	locks    map[string]int // live token → event
	seq      int
	refused  bool
	repeated bool
	acked    map[int]int // event → acknowledgements
	maxAsked int
}

func (f *fakeQueue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer key" || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/v1/subscriptions/sub_1/receive":
		var in struct {
			MaxEvents int    `json:"max_events"`
			MaxWait   string `json:"max_wait"`
			Lock      string `json:"lock_duration"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.MaxEvents < 1 || in.MaxWait != "1s" || in.Lock != "60s" {
			f.t.Errorf("receive body: %+v, %v", in, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.maxAsked = max(f.maxAsked, in.MaxEvents)
		k := min(in.MaxEvents, len(f.queue))
		take := slices.Clone(f.queue[:k])
		f.queue = f.queue[k:]
		var b bytes.Buffer
		b.WriteString(`{"data":[`)
		for i, n := range take {
			if n == 7 && !f.repeated {
				f.repeated = true
				f.queue = append(f.queue, 7)
			}
			f.seq++
			tok := fmt.Sprintf("lt_%d_%d", n, f.seq)
			f.locks[tok] = n
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"lock_token":%q,"delivery_id":"dlv_%d","delivery_count":1,"locked_until":"2030-01-01T00:00:00Z","event":{"specversion":"1.0","id":"%s%d","source":"/herald-bench","type":"bench.pull","benchsent":"%d","data":{"bench":true}}}`,
				tok, n, f.prefix, n, f.sent)
		}
		b.WriteString("]}\n")
		f.mu.Unlock()
		if len(take) == 0 {
			time.Sleep(5 * time.Millisecond) // a short long-poll
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.Bytes())
	case "/v1/subscriptions/sub_1/acknowledge":
		var in struct {
			Tokens []string `json:"lock_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Tokens) == 0 {
			f.t.Errorf("acknowledge body: %+v, %v", in, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		type failed struct {
			Token string `json:"lock_token"`
			Error string `json:"error"`
		}
		out := struct {
			Succeeded []string `json:"succeeded"`
			Failed    []failed `json:"failed"`
		}{Succeeded: []string{}, Failed: []failed{}}
		f.mu.Lock()
		for _, tok := range in.Tokens {
			n, ok := f.locks[tok]
			if ok && n == 5 && !f.refused {
				f.refused = true
				f.queue = append(f.queue, 5)
				ok = false
			}
			delete(f.locks, tok)
			if !ok {
				out.Failed = append(out.Failed, failed{tok, "the lock token holds no lock"})
				continue
			}
			f.acked[n]++
			out.Succeeded = append(out.Succeeded, tok)
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestPuller: consumers receive and acknowledge until every delivery is
// acknowledged, counting a delivery received again as a duplicate receive,
// a refused token as a lost lock, and one latency per distinct delivery.
func TestPuller(t *testing.T) {
	const n = 1000
	sent := time.Now().Add(-time.Second).UnixNano()
	f := &fakeQueue{t: t, prefix: "pull.main.1-", sent: sent, locks: map[string]int{}, acked: map[int]int{}}
	for i := range n {
		f.queue = append(f.queue, i)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := newClient(srv.URL, "key", 4)
	defer c.close()

	sink := &Receiver{URL: "pull:sub_1"}
	tr := newTrack(f.prefix, false, n, &recorder{})
	sink.setTrack(tr)
	lat := &recorder{}
	p := newPuller(c, "sub_1", 64, sink, lat, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- p.consume(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := tr.unique.Load(); got != n {
		t.Errorf("acknowledged %d distinct, want %d", got, n)
	}
	if tr.dups.Load() != 1 { // delivery 7, acknowledged under both its tokens
		t.Errorf("acknowledged again: %d, want 1", tr.dups.Load())
	}
	if p.dupReceives.Load() != 2 || p.lockLost.Load() != 1 || p.distinct() != n || p.stale.Load() != 0 {
		t.Errorf("duplicate receives %d (want 2), lost locks %d (want 1), distinct %d (want %d), stale %d",
			p.dupReceives.Load(), p.lockLost.Load(), p.distinct(), n, p.stale.Load())
	}
	if s := lat.summary(); s.Count != n || s.P50 < time.Second {
		t.Errorf("latencies: %+v, want %d of at least 1s", s, n)
	}
	if f.maxAsked != 64 || p.items.Load() != n+2 {
		t.Errorf("max_events %d (want 64), items %d (want %d)", f.maxAsked, p.items.Load(), n+2)
	}
	if first, last := tr.first.Load(), tr.last.Load(); first == 0 || last < first {
		t.Errorf("acknowledgement times %d … %d", first, last)
	}
}

// TestPullerFails: a receive answered with a client error fails the
// consumer at once, naming the call.
func TestPullerFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"title":"push subscription"}`))
	}))
	defer srv.Close()
	c := newClient(srv.URL, "key", 1)
	defer c.close()
	sink := &Receiver{}
	sink.setTrack(newTrack("p-", false, 1, &recorder{}))
	p := newPuller(c, "sub_1", 10, sink, &recorder{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.consume(ctx); err == nil || !strings.Contains(err.Error(), "receive answered 409") {
		t.Errorf("consume: %v", err)
	}
}

func TestComparePullPush(t *testing.T) {
	phase := func(rate float64) []PhaseResult { return []PhaseResult{{DeliveriesPerSec: rate}} }
	pullOnly := []Result{{Scenario: "pull", OK: true, Phases: phase(9000)}}
	comparePullPush(pullOnly, false)
	if b := pullOnly[0].Budget; len(b) != 1 || !b[0].NotMeasured || b[0].Met || !strings.Contains(b[0].Measured, "steady-batch was not run") {
		t.Errorf("without steady-batch: %+v", b)
	}

	both := []Result{{Scenario: "pull", OK: true, Phases: phase(12000)}, {Scenario: "steady-batch", OK: true, Phases: phase(10000)}}
	comparePullPush(both, false)
	b := both[0].Budget
	if len(b) != 1 || b[0].NotMeasured || !b[0].Met || !strings.Contains(b[0].Measured, "120 % (12,000/s vs. 10,000/s)") || !strings.Contains(b[0].Line, "embedded store") {
		t.Errorf("pull faster: %+v", b)
	}
	if len(both[1].Budget) != 0 {
		t.Errorf("steady-batch got a line: %+v", both[1].Budget)
	}

	slower := []Result{{Scenario: "steady-batch", OK: true, Phases: phase(10000)}, {Scenario: "pull", OK: true, Phases: phase(8000)}}
	comparePullPush(slower, true)
	if b := slower[1].Budget; len(b) != 1 || b[0].Met || !strings.Contains(b[0].Line, "PostgreSQL") {
		t.Errorf("pull slower, PostgreSQL: %+v", b)
	}

	failed := []Result{{Scenario: "steady-batch", OK: false}, {Scenario: "pull", OK: true, Phases: phase(8000)}}
	comparePullPush(failed, false)
	if b := failed[1].Budget; len(b) != 1 || !b[0].NotMeasured || !strings.Contains(b[0].Measured, "did not finish") {
		t.Errorf("steady-batch failed: %+v", b)
	}

	var out bytes.Buffer
	rep := &Report{Results: pullOnly}
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "budget NOT MEASURED: pull deliveries/s") {
		t.Errorf("table:\n%s", out.String())
	}
	if !rep.OK() {
		t.Error("a line not measured made the report fail")
	}
}

// TestScenariosRegistered: every scenario runs, is described, and is in
// the help text.
func TestScenariosRegistered(t *testing.T) {
	help := ScenarioHelp()
	for _, s := range Scenarios {
		if scenarioFuncs[s] == nil || scenarioInfo[s] == "" || !strings.Contains(help, s+" ") {
			t.Errorf("scenario %s: not registered, described or in the help", s)
		}
	}
	if len(scenarioFuncs) != len(Scenarios) {
		t.Errorf("%d scenario functions, %d scenarios", len(scenarioFuncs), len(Scenarios))
	}
	if !slices.Contains(Scenarios, "pull") {
		t.Error("pull is not in all")
	}
}

func TestPullSizesChecked(t *testing.T) {
	for _, tt := range []struct {
		set  func(*Sizes)
		want string
	}{
		{func(s *Sizes) { s.PullEvents = 0 }, "--pull-events"},
		{func(s *Sizes) { s.Consumers = 0 }, "--consumers"},
		{func(s *Sizes) { s.Consumers = 1001 }, "--consumers"},
		{func(s *Sizes) { s.PullBatch = 0 }, "--pull-batch"},
		{func(s *Sizes) { s.PullBatch = 1001 }, "--pull-batch"},
	} {
		s := DefaultSizes()
		tt.set(&s)
		if err := s.check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: check = %v", tt.want, err)
		}
	}
	b, err := json.Marshal(DefaultSizes())
	if err != nil || !strings.Contains(string(b), `"pull_events":100000`) || !strings.Contains(string(b), `"consumers":4`) {
		t.Errorf("sizes JSON: %s, %v", b, err)
	}
	if d := defaultTimeout("pull", DefaultSizes()); d < 3*time.Minute {
		t.Errorf("pull's deadline %v", d)
	}
}
