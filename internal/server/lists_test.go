package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/postgres"
)

// Memory bounds of TestDeadLetterPagesBoundedInBytesAndMemory: the live heap
// (the heap after a garbage collection, /gc/heap/live:bytes, sampled at
// every collection while the walks run; the test's client included) grows
// at most peakHeapGrowth over its level before four parallel walks of the
// dead-letter list, and after them and a GC the heap is back within
// retainedBound of that level. Without the page bound, each first page
// holds all 24 events, several times over (as rows and as JSON).
const (
	bigEvents      = 24
	bigData        = 1_000_000 // bytes of each event's data
	peakHeapGrowth = 64 << 20
	retainedHeap   = 8 << 20
	// envelopeBytes: the page's JSON beyond its events (delivery fields,
	// the list's envelope).
	envelopeBytes = 64 << 10
)

// TestDeadLetterPagesBoundedInBytesAndMemory dead-letters 24 events of about
// 1 MB (their endpoint answers 400: dead-lettered at once), then walks GET
// /v1/dead-letters?limit=1000 to its end four times in parallel: every
// response holds at most store.MaxPageBytes of events plus one event, every
// dead letter comes exactly once in each walk, and the process's heap stays
// bounded while they run and returns to its level after.
func TestDeadLetterPagesBoundedInBytesAndMemory(t *testing.T) {
	cfg := health.DefaultConfig()
	cfg.ProbationAfter = 0 // every delivery is attempted at once, on the fake clock
	b := setup(t, func(c *server.Config) { c.Scheduling.Health = cfg })
	eventBytes := deadLetterBigEvents(t, b)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	peak := watchLiveHeap()

	maxResponse := int64(store.MaxPageBytes + eventBytes + envelopeBytes)
	var wg sync.WaitGroup
	var largest atomic.Int64
	pages := make([]int, 4)
	for w := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages[w] = walkDeadLetters(t, b, w, maxResponse, &largest)
		}()
	}
	wg.Wait()
	top := peak()

	// Two collections: a sync.Pool (pgx's buffer pool, net/http's) keeps
	// its items through the first, as its victim cache, and frees them at
	// the second; what is left after both is what the walks retained.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	growth, retained := int64(top)-int64(before), int64(ms.HeapAlloc)-int64(before)
	t.Logf("pages per walk %v; largest response %d bytes (bound %d); heap before %d MiB, live heap peak +%.1f MiB (bound %d MiB), after GC %+.1f MiB (bound %d MiB)",
		pages, largest.Load(), maxResponse, before>>20, float64(growth)/(1<<20), peakHeapGrowth>>20, float64(retained)/(1<<20), retainedBound(eventBytes)>>20)
	if growth > peakHeapGrowth {
		t.Errorf("live heap grew %d MiB during the walks, over %d MiB", growth>>20, peakHeapGrowth>>20)
	}
	if bound := retainedBound(eventBytes); retained > bound {
		t.Errorf("heap after the walks and a GC is %d MiB over its level before, over %d MiB", retained>>20, bound>>20)
	}
	// One event per page at limit 1: the byte bound does not change the
	// item bound.
	var one struct {
		Data       []json.RawMessage
		NextCursor string `json:"next_cursor"`
	}
	if code, raw := b.do("GET", "/v1/dead-letters?limit=1", nil, &one); code != 200 || len(one.Data) != 1 || one.NextCursor == "" {
		t.Fatalf("limit=1: %d, %d items, cursor %q %.200s", code, len(one.Data), one.NextCursor, raw)
	}
}

// retainedBound is how far the heap may stay above its level before the
// walks: retainedHeap, and on PostgreSQL one read buffer per pooled
// connection. pgx keeps the buffer it grew for the largest message a
// connection read (a row holding one event, rounded up to a power of two
// by its buffer pool: at most twice the event) until that connection's
// next query, so an idle pool holds up to MaxConns of them; that is
// bounded by the pool, not by how many pages were walked.
func retainedBound(eventBytes int) int64 {
	if os.Getenv("HERALD_TEST_STORE") != "postgres" {
		return retainedHeap
	}
	conns := postgres.Options{}.Descriptors() - 1 // the pool, without the change feed's
	return retainedHeap + int64(conns)*2*int64(eventBytes)
}

// deadLetterBigEvents publishes bigEvents events of bigData bytes of data
// to a subscription whose endpoint answers 400, and waits until every one
// is dead-lettered; it returns the size of the largest event.
func deadLetterBigEvents(t *testing.T, b *bundle) (eventBytes int) {
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(rc.Close)
	sub := b.subscribe(map[string]any{"name": "big", "url": rc.URL})

	data := strings.Repeat("x", bigData)
	for i := 0; i < bigEvents; i++ {
		ev := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"big-%02d","source":"/test","type":"big","data":%q}`, i, data))
		eventBytes = max(eventBytes, len(ev))
		if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			t.Fatalf("publish %d: %d %s", i, code, raw)
		}
	}
	eventually(t, "every event dead-lettered", func() bool {
		var out struct{ Data []delivery }
		b.do("GET", "/v1/deliveries?limit=1000&status=dead_lettered&subscription_id="+sub, nil, &out)
		return len(out.Data) == bigEvents
	})
	return eventBytes
}

// walkDeadLetters, walk number w, streams GET /v1/dead-letters?limit=1000
// page by page to its end: no response is over maxResponse bytes and every
// dead letter comes exactly once. It keeps the largest response in largest
// and returns the number of pages.
func walkDeadLetters(t *testing.T, b *bundle, w int, maxResponse int64, largest *atomic.Int64) (pages int) {
	seen := map[string]int{}
	cursor := ""
	for {
		pg, err := streamPage(b.client, b.api.URL+"/v1/dead-letters?limit=1000&cursor="+url.QueryEscape(cursor))
		if err != nil {
			t.Errorf("walk %d, page %d: %v", w, pages, err)
			return pages
		}
		pages++
		if pg.bytes > largest.Load() {
			largest.Store(pg.bytes)
		}
		if pg.bytes > maxResponse {
			t.Errorf("walk %d, page %d: %d bytes, over %d (the page bound plus one event)", w, pages, pg.bytes, maxResponse)
		}
		for _, id := range pg.ids {
			seen[id]++
		}
		if pg.next == "" {
			break
		}
		cursor = pg.next
	}
	if len(seen) != bigEvents {
		t.Errorf("walk %d: %d dead letters, want %d", w, len(seen), bigEvents)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("walk %d: %s listed %d times", w, id, n)
		}
	}
	return pages
}

// watchLiveHeap samples the live heap (the heap after a garbage
// collection, /gc/heap/live:bytes, as of the last collection) every
// millisecond until the function it returns is called, which returns the
// highest sample.
func watchLiveHeap() (peak func() uint64) {
	var top atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(live)
			if v := live[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-sampled
		return top.Load()
	}
}

// listPage is what streamPage read of one page.
type listPage struct {
	ids   []string
	next  string
	bytes int64 // the response body's length
}

// streamPage GETs one page of the dead-letter list and decodes it item by
// item (the client holds one event at a time), checking that each dead
// letter carries its event.
func streamPage(client *http.Client, u string) (listPage, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return listPage{}, err
	}
	return streamAnswer(client, req, func(dec *json.Decoder) (string, error) {
		var item struct {
			ID      string `json:"id"`
			EventID string `json:"event_id"`
			Event   struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		if err := dec.Decode(&item); err != nil {
			return "", err
		}
		if item.Event.ID == "" || item.Event.ID != item.EventID {
			return "", fmt.Errorf("dead letter %s without its event", item.ID)
		}
		return item.ID, nil
	})
}

// streamAnswer sends req and decodes the answer, an object with "data"
// (read one item at a time by item, which returns the item's id) and
// maybe "next_cursor": the client holds one item at a time.
func streamAnswer(client *http.Client, req *http.Request, item func(*json.Decoder) (string, error)) (listPage, error) {
	var pg listPage
	resp, err := client.Do(req)
	if err != nil {
		return pg, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return pg, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	body := &countingReader{r: resp.Body}
	dec := json.NewDecoder(body)
	if err := expectDelim(dec, '{'); err != nil {
		return pg, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return pg, err
		}
		switch key {
		case "data":
			if err := expectDelim(dec, '['); err != nil {
				return pg, err
			}
			for dec.More() {
				id, err := item(dec)
				if err != nil {
					return pg, err
				}
				pg.ids = append(pg.ids, id)
			}
			if err := expectDelim(dec, ']'); err != nil {
				return pg, err
			}
		case "next_cursor":
			if err := dec.Decode(&pg.next); err != nil {
				return pg, err
			}
		default:
			return pg, fmt.Errorf("unexpected member %v", key)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return pg, err
	}
	_, err = io.Copy(io.Discard, body)
	pg.bytes = body.n
	return pg, err
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("got %v, want %v", tok, d)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestListsRejectCursorsTheyDidNotGive: every list answers 400 naming
// cursor for a cursor not in the form of its cursors, and 200 for one in
// that form.
func TestListsRejectCursorsTheyDidNotGive(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "c", "url": rc.URL})
	b.publish("evt-1", "t")
	d := b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	ulid := strings.TrimPrefix(d.ID, "dlv_")
	for _, tc := range []struct {
		path string
		bad  []string
		good string
	}{
		{"/v1/subscriptions", []string{"x", "sub_", "sub_" + ulid[1:], "dlv_" + ulid, "sub_" + strings.ToUpper(ulid)}, "sub_" + ulid},
		{"/v1/deliveries", []string{"zzz", "dlv_" + ulid + "0", sub, "dlv_" + ulid[1:] + "i"}, d.ID},
		{"/v1/deliveries/" + d.ID + "/attempts", []string{"abc", "-1", "1.5", "01", "2147483648", d.ID}, "1"},
		{"/v1/dead-letters", []string{"' OR 1=1 --", "dlv_" + ulid[:25]}, d.ID},
		{"/v1/endpoints", []string{"ep_", "ep_" + ulid, sub}, "ep_" + ulid[:20]},
	} {
		for _, c := range tc.bad {
			p := problemOf(t, b, "GET", tc.path+"?cursor="+url.QueryEscape(c), nil, http.StatusBadRequest)
			if p["field"] != "cursor" {
				t.Errorf("%s?cursor=%q: %v, want field cursor", tc.path, c, p)
			}
		}
		if code, raw := b.do("GET", tc.path+"?cursor="+url.QueryEscape(tc.good), nil, nil); code != http.StatusOK {
			t.Errorf("%s?cursor=%q: %d %s", tc.path, tc.good, code, raw)
		}
	}
}
