package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// keyReceiver is a real HTTP endpoint on loopback that records, per
// partitionkey of the structured CloudEvents it gets, the order of their
// data.seq and the most requests of one key it had in flight at once. It
// answers 500 to the first request of the key failKey, 200 to the others.
type keyReceiver struct {
	*receiver
	mu          sync.Mutex
	seqs        map[string][]int // by key ("" for events without one)
	inFlight    map[string]int
	maxInFlight map[string]int
	failKey     string
	failed      bool
}

func newKeyReceiver(t *testing.T, failKey string) *keyReceiver {
	kr := &keyReceiver{seqs: map[string][]int{}, inFlight: map[string]int{}, maxInFlight: map[string]int{}, failKey: failKey}
	kr.receiver = newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) {
		body := kr.request(n - 1).body
		var ev struct {
			PartitionKey string `json:"partitionkey"`
			Data         struct{ Seq int }
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(kr.take(ev.PartitionKey, ev.Data.Seq))
	})
	return kr
}

// take records one request of key, in flight while it runs, and says how
// to answer it.
func (kr *keyReceiver) take(key string, seq int) int {
	kr.mu.Lock()
	kr.inFlight[key]++
	kr.maxInFlight[key] = max(kr.maxInFlight[key], kr.inFlight[key])
	kr.seqs[key] = append(kr.seqs[key], seq)
	code := http.StatusOK
	if key == kr.failKey && !kr.failed {
		kr.failed, code = true, http.StatusInternalServerError
	}
	kr.mu.Unlock()
	defer func() {
		kr.mu.Lock()
		kr.inFlight[key]--
		kr.mu.Unlock()
	}()
	return code
}

// got returns the seqs received for key, in the order they came.
func (kr *keyReceiver) got(key string) []int {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return slices.Clone(kr.seqs[key])
}

// checkOrder fails the test unless every key but "" got its seqs in
// nondecreasing order (a retry repeats one) with never two in flight.
func (kr *keyReceiver) checkOrder(t *testing.T) {
	t.Helper()
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for key, seqs := range kr.seqs {
		if key == "" {
			continue
		}
		if !slices.IsSorted(seqs) {
			t.Errorf("key %s received out of order: %v", key, seqs)
		}
		if kr.maxInFlight[key] > 1 {
			t.Errorf("key %s had %d requests in flight at once", key, kr.maxInFlight[key])
		}
	}
}

// keyedEvents are perKey events of each key (seq 0 … perKey-1 in publish
// order, keys interleaved) and unkeyed events without a partitionkey.
func keyedEvents(prefix string, keys []string, perKey, unkeyed int) []map[string]any {
	var evs []map[string]any
	for i := range perKey {
		for _, k := range keys {
			evs = append(evs, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("%s-%s-%d", prefix, k, i), "source": "/orders",
				"type": "order.changed", "partitionkey": k, "data": map[string]any{"seq": i}})
		}
	}
	for i := range unkeyed {
		evs = append(evs, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("%s-none-%d", prefix, i), "source": "/orders",
			"type": "order.changed", "data": map[string]any{"seq": i}})
	}
	return evs
}

// publishAll publishes evs in one request (a JSON array).
func (b *bundle) publishAll(evs []map[string]any) {
	b.t.Helper()
	if code, raw := b.do("POST", "/v1/events", evs, nil); code != http.StatusAccepted {
		b.t.Fatalf("publish: %d %s", code, raw)
	}
}

// keyDeliveries lists a subscription's deliveries with one ordering key.
func (b *bundle) keyDeliveries(subID, key string) []orderedDelivery {
	b.t.Helper()
	var out struct{ Data []orderedDelivery }
	if code, raw := b.do("GET", "/v1/deliveries?limit=1000&subscription_id="+subID+"&ordering_key="+key, nil, &out); code != 200 {
		b.t.Fatalf("list deliveries by key: %d %s", code, raw)
	}
	return out.Data
}

type orderedDelivery struct {
	delivery
	OrderingKey *string `json:"ordering_key"`
}

// TestOrderingPerKey: a subscription with "ordering": "key" gets each
// key's deliveries in publish order, never two of a key at once; while
// one key's head fails and waits for its retry, the other keys and the
// events without a key all finish, and nothing more of that key is sent;
// when the head succeeds the rest of its key follows in order. The list by
// ordering key shows the key's deliveries with their ordering_key.
func TestOrderingPerKey(t *testing.T) {
	b := setup(t)
	kr := newKeyReceiver(t, "bad")
	sub := b.subscribe(map[string]any{"name": "ordered", "url": kr.URL, "ordering": "key"})
	keys := []string{"k0", "k1", "k2", "k3", "k4", "bad"}
	const perKey = 8
	b.publishAll(keyedEvents("e", keys, perKey, 5))
	eventually(t, "every key but the failing one delivered, and the unkeyed events", func() bool {
		for _, k := range keys[:5] {
			if len(kr.got(k)) != perKey {
				return false
			}
		}
		return len(kr.got("")) == 5 && len(kr.got("bad")) == 1
	})
	b.settle()
	if got := kr.got("bad"); len(got) != 1 {
		t.Fatalf("the failing key got %v while its head waits for its retry; want its head only", got)
	}
	held := b.keyDeliveries(sub, "bad")
	if len(held) != perKey || held[perKey-1].Attempts != 1 || held[0].Attempts != 0 || held[0].Status != "pending" ||
		held[0].OrderingKey == nil || *held[0].OrderingKey != "bad" {
		t.Fatalf("the failing key's deliveries: %+v", held)
	}
	b.clk.Advance(10 * time.Second) // eventgrid's first retry
	eventually(t, "the failing key's head retried and the rest of its key sent", func() bool { return len(kr.got("bad")) == perKey+1 })
	b.settle()
	if got := kr.got("bad"); !slices.Equal(got, []int{0, 0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("the failing key got %v", got)
	}
	kr.checkOrder(t)
	for _, d := range b.deliveries(sub) {
		if d.Status != "delivered" {
			t.Fatalf("delivery %s is %s", d.ID, d.Status)
		}
	}
}

// TestOrderingRefusals: an ordering other than none or key is refused on
// create and update naming ordering, and a partitionkey over 256 bytes (or
// not a string) is refused naming it; nothing changes.
func TestOrderingRefusals(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "o", "url": rc.URL, "ordering": "key"})
	refuseMembers(t, b, id, []member{
		{"fifo", `"ordering":"fifo"`, "ordering", "must be none or key"},
		{"a number", `"ordering":1`, "ordering", ""},
	})
	long := strings.Repeat("k", 257)
	refuseAll(t, b, []refusal{
		{name: "long partitionkey", method: "POST", path: "/v1/events",
			body: `{"specversion":"1.0","id":"1","source":"/s","type":"t","partitionkey":"` + long + `"}`, field: "partitionkey", detail: "at most 256 bytes"},
		{name: "numeric partitionkey", method: "POST", path: "/v1/events",
			body: `{"specversion":"1.0","id":"1","source":"/s","type":"t","partitionkey":7}`, field: "partitionkey", detail: "must be a string"},
	})
	var sub struct{ Ordering string }
	if code, raw := b.do("GET", "/v1/subscriptions/"+id, nil, &sub); code != 200 || sub.Ordering != "key" {
		t.Fatalf("GET after refusals: %d %s", code, raw)
	}
	var none struct{ Ordering string }
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+id, map[string]any{"ordering": "none"}, &none); code != 200 || none.Ordering != "none" {
		t.Fatalf("PATCH ordering none: %d %s", code, raw)
	}
	if code, _ := b.do("GET", "/v1/deliveries?ordering_key=k", nil, nil); code != http.StatusBadRequest {
		t.Fatalf("ordering_key without subscription_id: %d; want 400", code)
	}
}

// TestOrderingAcrossNodes: three nodes on one PostgreSQL schema, on the
// wall clock, publishing in turn (each round of events through the next
// node: the shared event sequence orders them) and all three claiming:
// every key's deliveries arrive in publish order, never two of a key at
// once, whichever node sends them.
func TestOrderingAcrossNodes(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) {
		c.Store, c.Clock, c.CatalogReload = url, clock.Real{}, 100*time.Millisecond
		c.Scheduling.RefreshInterval = 100 * time.Millisecond
	}
	nodes := []*bundle{setup(t, onPG), setup(t, onPG), setup(t, onPG)}
	kr := newKeyReceiver(t, "")
	sub := nodes[0].subscribe(map[string]any{"name": "ordered", "url": kr.URL, "ordering": "key"})
	eventually(t, "every node knows the subscription", func() bool {
		for _, n := range nodes {
			if n.srv.Catalog.Get(sub) == nil {
				return false
			}
		}
		return true
	})
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	const rounds = 10
	for i := range rounds {
		evs := keyedEvents(fmt.Sprintf("r%d", i), keys, 1, 0)
		for _, ev := range evs {
			ev["data"] = map[string]any{"seq": i}
		}
		nodes[i%len(nodes)].publishAll(evs)
	}
	eventually(t, "every key's deliveries received", func() bool {
		for _, k := range keys {
			if len(kr.got(k)) != rounds {
				return false
			}
		}
		return true
	})
	kr.checkOrder(t)
	for _, k := range keys {
		if got := kr.got(k); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Errorf("key %s got %v", k, got)
		}
	}
}
