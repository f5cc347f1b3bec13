package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/event"
)

func ds(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ds(7), 99, 7 * time.Millisecond},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p90 of 100", hundred, 90, 90 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p100 of 100", hundred, 100, 100 * time.Millisecond},
		{"p99 of 10 is the max", ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p50 of 10", ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5 * time.Millisecond},
		{"p50 of 3", ds(1, 2, 3), 50, 2 * time.Millisecond},
		{"p0 is the min", ds(4, 5), 0, 4 * time.Millisecond},
		{"over 100 is the max", ds(4, 5), 150, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: Percentile(p%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := ds(30, 10, 20, 50, 40)
	l := Summarize(s)
	want := Latency{Count: 5, P50: 30 * time.Millisecond, P90: 50 * time.Millisecond, P99: 50 * time.Millisecond, Max: 50 * time.Millisecond,
		P50ms: 30, P90ms: 50, P99ms: 50, MaxMs: 50}
	if l != want {
		t.Errorf("Summarize = %+v, want %+v", l, want)
	}
	if (Summarize(nil) != Latency{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", Summarize(nil))
	}

	var a, b recorder
	a.add(3 * time.Millisecond)
	a.add(-time.Millisecond) // counted as 0
	b.add(time.Millisecond)
	m := merged(&a, &b)
	if m.Count != 3 || m.Max != 3*time.Millisecond || m.P50 != time.Millisecond {
		t.Errorf("merged = %+v", m)
	}
}

func TestParseStatus(t *testing.T) {
	const status = "Name:\therald\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 1800000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"
	m, err := ParseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.Peak != 200<<20 || m.RSS != 100<<20 {
		t.Errorf("ParseStatus = %+v, want peak 200 MiB, rss 100 MiB", m)
	}
	if m, err := ParseStatus([]byte("Name:\tx\n")); err != nil || (m != Mem{}) {
		t.Errorf("without the fields: %+v, %v; want zero, nil", m, err)
	}
	for _, bad := range []string{"VmRSS:\t12 MB\n", "VmHWM:\tx kB\n", "VmRSS:\n"} {
		if _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q): no error", bad)
		}
	}
}

func TestParseStat(t *testing.T) {
	// Fields 14 and 15 are utime and stime; the command name holds spaces
	// and parentheses.
	const stat = "4242 (her ald) (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 130 0 0 20 0 9 0 100 1000000 2500 18446744073709551615\n"
	d, err := ParseStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3800 * time.Millisecond; d != want {
		t.Errorf("ParseStat = %v, want %v (380 ticks)", d, want)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u s"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseLoadavgAndMeminfo(t *testing.T) {
	l, err := ParseLoadavg([]byte("0.50 1.25 2.00 2/141 28552\n"))
	if err != nil || l != [3]float64{0.5, 1.25, 2} {
		t.Errorf("ParseLoadavg = %v, %v", l, err)
	}
	if _, err := ParseLoadavg([]byte("0.5")); err == nil {
		t.Error("ParseLoadavg of one field: no error")
	}
	n, err := ParseMeminfo([]byte("MemTotal:       24684132 kB\nMemFree:        1 kB\n"))
	if err != nil || n != 24684132<<10 {
		t.Errorf("ParseMeminfo = %d, %v", n, err)
	}
	if _, err := ParseMeminfo([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("ParseMeminfo without MemTotal: no error")
	}
}

func TestParseCPUBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	d, err := ParseCPUBusy([]byte("cpu  100 5 50 9000 30 2 3 10 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if err != nil || d != 1700*time.Millisecond {
		t.Errorf("ParseCPUBusy = %v, %v; want 1.7s (170 ticks)", d, err)
	}
	if _, err := ParseCPUBusy([]byte("intr 1 2 3\n")); err == nil {
		t.Error("ParseCPUBusy of another line: no error")
	}
}

func TestParsePending(t *testing.T) {
	text := `# HELP herald_deliveries_pending Pending deliveries in the store by lane.
# TYPE herald_deliveries_pending gauge
herald_deliveries_pending{lane="fresh"} 12
herald_deliveries_pending{lane="retry"} 1e+06
herald_dispatch_in_flight 3
`
	fresh, retry, ok := ParsePending([]byte(text))
	if !ok || fresh != 12 || retry != 1_000_000 {
		t.Errorf("ParsePending = %d, %d, %v; want 12, 1000000, true", fresh, retry, ok)
	}
	if _, _, ok := ParsePending([]byte(`herald_deliveries_pending{lane="fresh"} 1`)); ok {
		t.Error("ParsePending without the retry lane: ok")
	}
}

// The events the bench publishes are accepted by Herald's own parser, and
// what Herald delivers (its Marshal) gives back the id and publish time.
func TestEventsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		batch int
		uuids bool
	}{{1, false}, {3, false}, {3, true}} {
		batch := tc.batch
		l := &load{prefix: "s.main.1-", events: 10, batch: batch, data: eventData(100), typeOf: typeName, uuids: tc.uuids}
		body := l.body(nil, 4, 4+batch, 1234567890123)
		h := http.Header{}
		h.Set("Content-Type", "application/cloudevents+json")
		if batch > 1 {
			h.Set("Content-Type", "application/cloudevents-batch+json")
		}
		evs, err := event.Parse(h, body)
		if err != nil {
			t.Fatalf("batch %d: Herald rejects the bench's body: %v\n%s", batch, err, body)
		}
		if len(evs) != batch {
			t.Fatalf("batch %d: parsed %d events", batch, len(evs))
		}
		for i, ev := range evs {
			want := "s.main.1-" + strconv.Itoa(4+i)
			if tc.uuids {
				want = string(appendEventID(nil, "s.main.1-", 4+i, true))
			}
			if ev.ID != want || ev.Type != typeName(4+i) {
				t.Errorf("event %d: id %q type %q, want %q %q", i, ev.ID, ev.Type, want, typeName(4+i))
			}
			out, err := ev.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			id, sent := parseDelivered(out)
			if string(id) != ev.ID || sent != 1234567890123 {
				t.Errorf("parseDelivered(%s) = %q, %d", out, id, sent)
			}
		}
	}
	if n := len(eventData(512)); n != 512 {
		t.Errorf("eventData(512) is %d bytes", n)
	}
	if !json.Valid(eventData(0)) || !json.Valid(eventData(512)) {
		t.Error("eventData is not JSON")
	}
}

func TestTrack(t *testing.T) {
	var lat recorder
	tr := newTrack("p-", false, 100, &lat)
	if !tr.mark(5, 2000, 1000) || !tr.mark(5, 3000, 1000) || !tr.mark(99, 2500, 0) {
		t.Fatal("mark refused an id in range")
	}
	if tr.mark(100, 1, 1) || tr.mark(-1, 1, 1) {
		t.Error("mark took an id out of range")
	}
	if tr.unique.Load() != 2 || tr.dups.Load() != 1 {
		t.Errorf("unique %d dups %d, want 2 and 1", tr.unique.Load(), tr.dups.Load())
	}
	if tr.first.Load() != 2000 || tr.last.Load() != 2500 {
		t.Errorf("first %d last %d, want 2000 and 2500", tr.first.Load(), tr.last.Load())
	}
	if s := lat.summary(); s.Count != 1 || s.Max != 1000 {
		t.Errorf("latencies %+v, want one of 1µs", s)
	}
}

func post(t *testing.T, c *http.Client, url, body string, attempt int) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Herald-Delivery-Attempt", strconv.Itoa(attempt))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestReceiver(t *testing.T) {
	r, err := startReceiver("/hook/a", false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	var lat recorder
	tr := newTrack("x.y.1-", false, 10, &lat)
	r.setTrack(tr)
	c := &http.Client{Timeout: 10 * time.Second}
	sent := time.Now().UnixNano()
	ev := func(id string) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"t","benchsent":"` + strconv.FormatInt(sent, 10) + `","data":{}}`
	}
	if code := post(t, c, r.URL, ev("x.y.1-3"), 1); code != 200 {
		t.Errorf("ok mode answered %d", code)
	}
	post(t, c, r.URL, ev("x.y.1-3"), 2)
	post(t, c, r.URL, ev("other-3"), 1)
	if tr.unique.Load() != 1 || tr.dups.Load() != 1 || r.stale.Load() != 1 || lat.summary().Count != 1 {
		t.Errorf("unique %d dups %d stale %d latencies %d; want 1 1 1 1", tr.unique.Load(), tr.dups.Load(), r.stale.Load(), lat.summary().Count)
	}

	r.mode.Store(modeFail)
	if code := post(t, c, r.URL, ev("x.y.1-4"), 1); code != 503 {
		t.Errorf("fail mode answered %d", code)
	}
	r.mode.Store(modeFailFirst)
	if code := post(t, c, r.URL, ev("x.y.1-5"), 1); code != 500 {
		t.Errorf("fail-first mode answered %d to attempt 1", code)
	}
	if code := post(t, c, r.URL, ev("x.y.1-5"), 2); code != 200 {
		t.Errorf("fail-first mode answered %d to attempt 2", code)
	}
	if tr.unique.Load() != 2 || r.failed.Load() != 2 || r.retried.Load() != 1 {
		t.Errorf("unique %d failed %d retried %d; want 2 2 1", tr.unique.Load(), r.failed.Load(), r.retried.Load())
	}
}

func TestBlackholeReceiver(t *testing.T) {
	r, err := startReceiver("/hook/hole", true)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 200 * time.Millisecond}
	_, err = c.Post(r.URL, "application/json", strings.NewReader("{}"))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a black hole answered: %v", err)
	}
	if r.requests.Load() != 1 {
		t.Errorf("connections %d, want 1", r.requests.Load())
	}
	r.close() // returns: closes the held connections
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.6: "1,234,568", -4200: "-4,200"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func sampleReport() *Report {
	return &Report{
		Machine: Machine{CPUs: 2, MemoryMiB: 24105, GoVersion: "go1.26.8", OS: "linux/amd64", Kernel: "6.18"},
		Sizes:   DefaultSizes(),
		Results: []Result{
			{Scenario: "steady-batch", OK: true, Seconds: 10.5, PeakRSSMiB: 129, CPUSeconds: 11.8, LoadStart: [3]float64{0.5, 0, 0},
				Phases: []PhaseResult{{Events: 100000, EventsPerSec: 9680, Deliveries: 100000, Expected: 100000, DeliveriesPerSec: 9672.4,
					Latency: Summarize(ds(44, 74, 111, 158)), PeakRSSMiB: 129, CPUPer1000: 0.118}},
				Budget: []Check{{Line: "durable deliveries/s", Budget: "≥ 10,000/s", Measured: "9,672/s", Met: false}}},
			{Scenario: "blackhole", OK: false, Error: "blackhole/normal: received 3 of 5 deliveries: context deadline exceeded",
				Phases:  []PhaseResult{{Name: "normal", Deliveries: 3, Expected: 5}},
				Figures: []Figure{{Name: "healthy throughput vs. normal", Value: 104.456, Unit: "%"}}},
		},
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	var squeezed []string
	for _, line := range strings.Split(out, "\n") {
		squeezed = append(squeezed, strings.Join(strings.Fields(line), " "))
	}
	flat := strings.Join(squeezed, "\n")
	for _, want := range []string{
		"2 CPUs, 24,105 MiB, go1.26.8",
		"steady-batch 9,680 100,000 9,672 74.0 158 158 158 129 0.118",
		"blackhole/normal",
		"3/5",
		"budget MISSED: durable deliveries/s — ≥ 10,000/s: 9,672/s",
		"blackhole: FAILED",
		"error: blackhole/normal: received 3 of 5",
		"healthy throughput vs. normal: 104.46 %",
	} {
		if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Machine Machine `json:"machine"`
		Results []struct {
			Scenario string `json:"scenario"`
			OK       bool   `json:"ok"`
			Phases   []struct {
				DeliveriesPerSec float64 `json:"deliveries_per_sec"`
				Latency          struct {
					P99ms float64 `json:"p99_ms"`
				} `json:"latency"`
			} `json:"phases"`
			Budget []Check `json:"budget"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"duration": "20s"`) || !strings.Contains(b.String(), `"batch": 100`) {
		t.Errorf("sizes not in the JSON:\n%s", b.String())
	}
	r := back.Results[0]
	if back.Machine.CPUs != 2 || r.Scenario != "steady-batch" || !r.OK || r.Phases[0].DeliveriesPerSec != 9672.4 ||
		r.Phases[0].Latency.P99ms != 158 || len(r.Budget) != 1 || r.Budget[0].Met {
		t.Errorf("JSON round trip: %+v\n%s", back, b.String())
	}
}

func TestParseScenarios(t *testing.T) {
	all, err := ParseScenarios("all")
	if err != nil || !slices.Equal(all, AllScenarios()) || len(all) == 0 {
		t.Errorf("all: %v, %v", all, err)
	}
	two, err := ParseScenarios("latency, fanout,latency")
	if err != nil || len(two) != 2 || two[0] != "latency" || two[1] != "fanout" {
		t.Errorf("list: %v, %v", two, err)
	}
	if _, err := ParseScenarios("nope"); err == nil {
		t.Error("unknown scenario: no error")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	s := DefaultSizes()
	s.Batch = 0
	if _, err := Run(context.Background(), Config{Herald: "/nonexistent/herald"}); err == nil {
		t.Error("missing binary: no error")
	}
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "--batch") {
		t.Errorf("check: %v", err)
	}
	if err := DefaultSizes().check(); err != nil {
		t.Errorf("default sizes: %v", err)
	}
}
