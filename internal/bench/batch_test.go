package bench

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/event"
)

func TestEachElement(t *testing.T) {
	tests := []struct {
		body  string
		array bool
		want  []string
	}{
		{`[{"id":"a"},{"id":"b"}]`, true, []string{`{"id":"a"}`, `{"id":"b"}`}},
		{" \n[ {\"id\":\"a\"} ,\n\t{\"id\":\"b\",\"x\":[1,{\"y\":[]}]} ]\n", true, []string{`{"id":"a"}`, `{"id":"b","x":[1,{"y":[]}]}`}},
		{`[{"s":"],[{}\"]"},{"t":"\\"}]`, true, []string{`{"s":"],[{}\"]"}`, `{"t":"\\"}`}},
		{`[]`, true, nil},
		{` [ ] `, true, nil},
		{`[1,"two",null]`, true, []string{`1`, `"two"`, `null`}},
		{`[{"id":"a"},{"id":"b"`, true, []string{`{"id":"a"}`}}, // cut short: what ended
		{`{"id":"a","data":[1,2]}`, false, nil},
		{``, false, nil},
		{`  `, false, nil},
	}
	for _, tt := range tests {
		var got []string
		array := eachElement([]byte(tt.body), func(e []byte) { got = append(got, string(e)) })
		if array != tt.array || !slices.Equal(got, tt.want) {
			t.Errorf("eachElement(%q) = %v %q, want %v %q", tt.body, array, got, tt.array, tt.want)
		}
	}
}

func TestIsBatchType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/cloudevents-batch+json":                true,
		"Application/CloudEvents-Batch+JSON; charset=utf-8": true,
		"application/cloudevents+json":                      false,
		"application/json":                                  false,
		"":                                                  false,
	} {
		if got := isBatchType(ct); got != want {
			t.Errorf("isBatchType(%q) = %v", ct, got)
		}
	}
}

// What Herald pushes to a batching subscription (event.Encode over the
// stored events, as Marshal writes them) is counted event by event, each
// with its own latency.
func TestReceiverCountsHeraldBatches(t *testing.T) {
	l := &load{prefix: "b.max-100.1-", events: 10, batch: 4, data: eventData(200), typeOf: typeName}
	h := http.Header{}
	h.Set("Content-Type", batchType)
	sent := time.Now().UnixNano()
	evs, err := event.Parse(h, l.body(nil, 2, 6, sent))
	if err != nil {
		t.Fatal(err)
	}
	var items []event.Item
	for _, ev := range evs {
		p, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, event.Item{Payload: p, DeliveryID: "dlv_" + ev.ID, Attempt: 1, PublishedAt: time.Now()})
	}
	batch, err := event.Encode(event.SchemaCloudEvents, event.Target{Batch: true}, items)
	if err != nil {
		t.Fatal(err)
	}
	one, err := event.Encode(event.SchemaCloudEvents, event.Target{Batch: true}, items[:1])
	if err != nil {
		t.Fatal(err)
	}
	single, err := event.Encode(event.SchemaCloudEvents, event.Target{}, items[3:])
	if err != nil {
		t.Fatal(err)
	}
	if !isBatchType(batch.ContentType) || !isBatchType(one.ContentType) || isBatchType(single.ContentType) {
		t.Fatalf("content types %q %q %q", batch.ContentType, one.ContentType, single.ContentType)
	}

	r, err := startReceiver("/hook/batch", false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	var lat recorder
	tr := newTrack(l.prefix, false, l.events, &lat)
	r.setTrack(tr)
	c := &http.Client{Timeout: 10 * time.Second}
	send := func(enc event.Encoded) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.URL, strings.NewReader(string(enc.Body)))
		req.Header.Set("Content-Type", enc.ContentType)
		req.Header.Set("Herald-Delivery-Attempt", "1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("answered %d", resp.StatusCode)
		}
	}
	send(batch)  // events 2–5
	send(one)    // event 2 again: a duplicate
	send(single) // event 5 again, unbatched: a duplicate
	stale := `[{"specversion":"1.0","id":"other-1","source":"/s","type":"t","benchsent":"1","data":{}},` +
		`{"specversion":"1.0","id":"` + l.prefix + `9","source":"/s","type":"t","benchsent":"` + strconv.FormatInt(sent, 10) + `","data":{}}]`
	send(event.Encoded{Body: []byte(stale), ContentType: batchType}) // one stale, event 9

	if tr.unique.Load() != 5 || tr.dups.Load() != 2 || r.stale.Load() != 1 {
		t.Errorf("unique %d dups %d stale %d; want 5 2 1", tr.unique.Load(), tr.dups.Load(), r.stale.Load())
	}
	if r.requests.Load() != 4 || r.events.Load() != 8 || r.batches.Load() != 3 {
		t.Errorf("requests %d events %d batches %d; want 4 8 3", r.requests.Load(), r.events.Load(), r.batches.Load())
	}
	if s := lat.summary(); s.Count != 5 || s.Max <= 0 || s.Max > time.Minute {
		t.Errorf("latencies %+v, want 5 of the events' own", s)
	}
	for n := 2; n <= 5; n++ {
		if tr.seen[0]&(1<<n) == 0 {
			t.Errorf("event %d not counted", n)
		}
	}
}

func TestBatchScenarioRegistered(t *testing.T) {
	if !slices.Contains(Scenarios, "batch") || scenarioFuncs["batch"] == nil || !strings.Contains(ScenarioHelp(), "max_events_per_batch") {
		t.Error("batch is not in all, registered, or described")
	}
	all, err := ParseScenarios("all")
	if err != nil || !slices.Contains(all, "batch") {
		t.Errorf("all: %v, %v", all, err)
	}
	if d := defaultTimeout("batch", DefaultSizes()); d < 4*time.Minute {
		t.Errorf("batch's deadline %v: two runs of steady-batch's load", d)
	}
}

func TestBatchKB(t *testing.T) {
	// 100 of the bench's events with 512 bytes of data each (689 bytes
	// stored) fit; the size stays in the API's 1..1024.
	l := &load{prefix: "batch.max-100.12-", events: 100000, batch: 1, data: eventData(512), typeOf: typeName}
	h := http.Header{}
	h.Set("Content-Type", "application/cloudevents+json")
	evs, err := event.Parse(h, l.body(nil, 99999, 100000, time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := evs[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a stored event with 512 bytes of data: %d bytes", len(stored))
	if kb := batchKB(100, 512); 100*len(stored) > kb*1024 || kb > 1024 {
		t.Errorf("batchKB(100, 512) = %d: 100 events of %d bytes do not fit", kb, len(stored))
	}
	for _, c := range [][2]int{{1, 0}, {1000, 65536}, {5000, 512}} {
		if kb := batchKB(c[0], c[1]); kb < 1 || kb > 1024 {
			t.Errorf("batchKB(%d, %d) = %d, outside 1..1024", c[0], c[1], kb)
		}
	}
}
