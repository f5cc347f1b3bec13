package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// received is one item of a receive answer.
type receivedItem struct {
	LockToken     string          `json:"lock_token"`
	DeliveryID    string          `json:"delivery_id"`
	DeliveryCount int             `json:"delivery_count"`
	Event         json.RawMessage `json:"event"`
}

// receive calls receive on a subscription and returns what it locked.
func receive(b *bundle, subID string, body map[string]any) []receivedItem {
	b.t.Helper()
	var out struct{ Data []receivedItem }
	var in any
	if body != nil {
		in = body
	}
	if code, raw := b.do("POST", "/v1/subscriptions/"+subID+"/receive", in, &out); code != 200 {
		b.t.Fatalf("receive: %d %s", code, raw)
	}
	return out.Data
}

type settleResult struct {
	Succeeded []string
	Failed    []struct {
		LockToken string `json:"lock_token"`
		Error     string
	}
}

// settleLocks calls acknowledge, release, reject or renew-lock.
func settleLocks(b *bundle, subID, action string, tokens []string, extra map[string]any) settleResult {
	b.t.Helper()
	body := map[string]any{"lock_tokens": tokens}
	for k, v := range extra {
		body[k] = v
	}
	var out settleResult
	if code, raw := b.do("POST", "/v1/subscriptions/"+subID+"/"+action, body, &out); code != 200 {
		b.t.Fatalf("%s: %d %s", action, code, raw)
	}
	return out
}

func tokens(items []receivedItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.LockToken)
	}
	return out
}

// TestSAPDeactivatesAndQueues: the sap preset retries at 8, 64, 512, 4,096
// and 32,768 s after the first failure; when the fifth retry fails, the
// subscription is deactivated and the delivery queued, and every later
// event is queued at publish without a push. The queued list by URL shows
// them with their events; reactivation pushes all of them.
func TestSAPDeactivatesAndQueues(t *testing.T) {
	b := setup(t)
	ops := b.opsReceiver("herald.subscription.deactivated", "herald.subscription.reactivated")
	rc, failing := switchable(t, http.StatusBadGateway, true)
	sub := b.subscribe(map[string]any{"name": "sap", "url": rc.URL, "retry_policy": map[string]any{"preset": "sap"}})
	b.publish("evt-1", "x")
	d := stepRetries(b, sub, 5, func(k int) time.Duration { return time.Duration(1<<(3*k)) * time.Second })
	if d.Status != "queued" || d.Attempts != 6 {
		t.Fatalf("after the sap schedule: %+v, want queued after 6 attempts", d)
	}
	if s := subStateOf(b, sub); s.State != "deactivated" || s.StateReason == nil ||
		*s.StateReason != "a push failed its last retry (retry_policy then: queue)" {
		t.Fatalf("subscription after the sap schedule: %+v, want deactivated as its last retry failed", s)
	}
	b.publish("evt-2", "x")
	b.publish("evt-3", "x")
	b.settle()
	if rc.count() != 6 {
		t.Fatalf("the receiver got %d requests; a deactivated subscription must push nothing (want 6)", rc.count())
	}
	var queued struct {
		Data []struct {
			ID     string
			Status string
			Event  struct{ ID string }
		}
	}
	if code, raw := b.do("GET", "/v1/deliveries?status=queued&url="+url.QueryEscape(rc.URL), nil, &queued); code != 200 || len(queued.Data) != 3 {
		t.Fatalf("queued by url: %d %s", code, raw)
	}
	// Newest first: evt-1 last (evt-2 and evt-3 share a millisecond on the
	// fake clock, so their order is the IDs' random part).
	seen := map[string]bool{}
	for _, q := range queued.Data {
		if q.Status != "queued" {
			t.Fatalf("queued list item %+v", q)
		}
		seen[q.Event.ID] = true
	}
	if !seen["evt-2"] || !seen["evt-3"] || queued.Data[2].Event.ID != "evt-1" {
		t.Fatalf("queued by url: %+v, want evt-2 and evt-3 then evt-1, with their events", queued.Data)
	}
	if code, _ := b.do("GET", "/v1/deliveries?url="+url.QueryEscape(rc.URL), nil, nil); code != 400 {
		t.Fatalf("url without status=queued: %d, want 400", code)
	}

	failing.Store(false)
	var re struct {
		State    string
		Requeued int
	}
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/reactivate", nil, &re); code != 200 || re.State != "active" || re.Requeued != 3 {
		t.Fatalf("reactivate: %d %s", code, raw)
	}
	eventually(t, "the three queued deliveries delivered", func() bool {
		ds := b.deliveries(sub)
		for _, d := range ds {
			if d.Status != "delivered" {
				return false
			}
		}
		return len(ds) == 3
	})
	b.publish("evt-4", "x")
	eventually(t, "a new event pushed at once", func() bool { return rc.count() == 6+3+1 })
	eventually(t, "the two operational events", func() bool { return ops.count() == 2 })
	b.settle()
	evs := opsEvents(t, ops)
	if evs[0]["type"] != "herald.subscription.deactivated" || evs[1]["type"] != "herald.subscription.reactivated" || ops.count() != 2 {
		t.Fatalf("operational events: %v", evs)
	}
}

// TestFailurePolicyQueue: with failure_policy queue, the first failed push
// queues the delivery and deactivates the subscription; its queue is then
// received and acknowledged like a pull subscription's.
func TestFailurePolicyQueue(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	sub := b.subscribe(map[string]any{"name": "q", "url": rc.URL, "failure_policy": "queue"})
	if code, _ := b.do("POST", "/v1/subscriptions/"+sub+"/receive", nil, nil); code != 409 {
		t.Fatalf("receive on an active push subscription: %d, want 409", code)
	}
	b.publish("e1", "t")
	d := b.waitDelivery(sub, "queued after one failure", func(d delivery) bool { return d.Status == "queued" })
	if d.Attempts != 1 {
		t.Fatalf("queued after %d attempts, want 1", d.Attempts)
	}
	got := receive(b, sub, map[string]any{"max_events": 10})
	if len(got) != 1 || got[0].DeliveryID != d.ID || got[0].DeliveryCount != 1 {
		t.Fatalf("receive: %+v", got)
	}
	if r := settleLocks(b, sub, "acknowledge", tokens(got), nil); len(r.Succeeded) != 1 || len(r.Failed) != 0 {
		t.Fatalf("acknowledge: %+v", r)
	}
	if d := b.only(sub); d.Status != "delivered" {
		t.Fatalf("after acknowledge: %+v", d)
	}
}

// TestPullSubscription: a pull subscription (no url) queues every event;
// receive locks disjointly; acknowledge delivers, release makes it
// receivable after its delay, reject dead-letters (Rejected), renew-lock
// extends a lock, an expired lock makes the delivery receivable again with
// its count up, and max_attempts receives without an acknowledgement
// dead-letter it.
func TestPullSubscription(t *testing.T) {
	b := setup(t)
	var sub struct {
		ID, URL, State, DeliveryMode string
	}
	body := map[string]any{"name": "puller", "delivery_mode": "pull",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "max_attempts": 2}}
	if code, raw := b.do("POST", "/v1/subscriptions", body, &sub); code != 201 {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		b.publish(id, "t")
	}
	first := receive(b, sub.ID, map[string]any{"max_events": 2})
	second := receive(b, sub.ID, map[string]any{"max_events": 10, "lock_duration": "30s"})
	if len(first) != 2 || len(second) != 2 {
		t.Fatalf("receives got %d and %d, want 2 and 2", len(first), len(second))
	}
	seen := map[string]bool{}
	for _, it := range append(first, second...) {
		if seen[it.DeliveryID] {
			t.Fatalf("delivery %s received twice under live locks", it.DeliveryID)
		}
		seen[it.DeliveryID] = true
	}
	if got := receive(b, sub.ID, nil); len(got) != 0 {
		t.Fatalf("everything is locked, yet receive got %d", len(got))
	}
	// first[0] acknowledged, first[1] rejected; second[0] released for 10s,
	// second[1] renewed to 60s.
	if r := settleLocks(b, sub.ID, "acknowledge", []string{first[0].LockToken, first[0].LockToken}, nil); len(r.Succeeded) != 1 || len(r.Failed) != 1 {
		t.Fatalf("acknowledge twice: %+v", r)
	}
	if r := settleLocks(b, sub.ID, "reject", []string{first[1].LockToken}, nil); len(r.Succeeded) != 1 {
		t.Fatalf("reject: %+v", r)
	}
	if r := settleLocks(b, sub.ID, "release", []string{second[0].LockToken}, map[string]any{"delay": "10s"}); len(r.Succeeded) != 1 {
		t.Fatalf("release: %+v", r)
	}
	if r := settleLocks(b, sub.ID, "renew-lock", []string{second[1].LockToken}, map[string]any{"lock_duration": "60s"}); len(r.Succeeded) != 1 {
		t.Fatalf("renew: %+v", r)
	}
	b.clk.Advance(10 * time.Second)
	again := receive(b, sub.ID, map[string]any{"max_events": 10})
	if len(again) != 1 || again[0].DeliveryID != second[0].DeliveryID || again[0].DeliveryCount != 2 {
		t.Fatalf("after the release's delay: %+v", again)
	}
	// The old token of the released delivery no longer settles.
	if r := settleLocks(b, sub.ID, "acknowledge", []string{second[0].LockToken}, nil); len(r.Failed) != 1 {
		t.Fatalf("an old token: %+v", r)
	}
	// The renewed lock outlives the first 30 s; after 60 s it expires.
	b.clk.Advance(25 * time.Second)
	if got := receive(b, sub.ID, nil); len(got) != 0 {
		t.Fatalf("a renewed lock let its delivery go: %+v", got)
	}
	b.clk.Advance(60 * time.Second)
	// again[0]'s lock (60 s) and the renewed one expired: both come back,
	// but again[0] was received twice (max_attempts 2): it is dead-lettered.
	last := receive(b, sub.ID, map[string]any{"max_events": 10})
	if len(last) != 1 || last[0].DeliveryID != second[1].DeliveryID || last[0].DeliveryCount != 2 {
		t.Fatalf("after the locks expired: %+v", last)
	}
	status := map[string]delivery{}
	for _, d := range b.deliveries(sub.ID) {
		status[d.ID] = d
	}
	want := map[string]string{first[0].DeliveryID: "delivered", first[1].DeliveryID: "dead_lettered", second[0].DeliveryID: "dead_lettered", second[1].DeliveryID: "queued"}
	for id, st := range want {
		if status[id].Status != st {
			t.Errorf("delivery %s: %s, want %s", id, status[id].Status, st)
		}
	}
	if r := *status[first[1].DeliveryID].DeadLetterReason; r != "Rejected" {
		t.Errorf("rejected delivery's reason %q", r)
	}
	if r := *status[second[0].DeliveryID].DeadLetterReason; r != "MaxDeliveryAttemptsExceeded" {
		t.Errorf("twice-received delivery's reason %q", r)
	}
}

// TestReceiveLongPollWakesOnPublish: a receive waiting (max_wait 60s on the
// fake clock, which does not move) returns the event published while it
// waits.
func TestReceiveLongPollWakesOnPublish(t *testing.T) {
	b := setup(t)
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "p", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	got := make(chan []receivedItem, 1)
	go func() {
		var out struct{ Data []receivedItem }
		b.do("POST", "/v1/subscriptions/"+sub.ID+"/receive", map[string]any{"max_wait": "60s"}, &out)
		got <- out.Data
	}()
	eventually(t, "the receive waiting", func() bool { return b.srv.API.Queue.(interface{ Waiting() int }).Waiting() == 1 })
	b.publish("late", "t")
	select {
	case items := <-got:
		if len(items) != 1 {
			t.Fatalf("the woken receive got %d", len(items))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting receive was not woken by the publish")
	}
	// A wait that nothing wakes ends at max_wait on the clock.
	go func() {
		var out struct{ Data []receivedItem }
		b.do("POST", "/v1/subscriptions/"+sub.ID+"/receive", map[string]any{"max_wait": "5s"}, &out)
		got <- out.Data
	}()
	eventually(t, "the second receive waiting", func() bool { return b.srv.API.Queue.(interface{ Waiting() int }).Waiting() == 1 })
	b.clk.Advance(5 * time.Second)
	select {
	case items := <-got:
		if len(items) != 0 {
			t.Fatalf("got %d from an empty queue", len(items))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the receive did not end at max_wait")
	}
}

// TestConcurrentReceiversGetDisjointLocks: four consumers receiving at once
// from one queue get every delivery exactly once.
func TestConcurrentReceiversGetDisjointLocks(t *testing.T) {
	b := setup(t)
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "p", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	publishBatch(b, "ev", "t", 200)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var out struct{ Data []receivedItem }
				if code, raw := b.do("POST", "/v1/subscriptions/"+sub.ID+"/receive", map[string]any{"max_events": 7}, &out); code != 200 {
					t.Errorf("receive: %d %s", code, raw)
					return
				}
				if len(out.Data) == 0 {
					return
				}
				mu.Lock()
				for _, it := range out.Data {
					seen[it.DeliveryID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("received %d distinct deliveries, want 200", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("delivery %s received %d times", id, n)
		}
	}
}

// TestQueueInputIsChecked: bad consumer input names its field and changes
// nothing.
func TestQueueInputIsChecked(t *testing.T) {
	b := setup(t)
	var sub struct{ ID string }
	b.do("POST", "/v1/subscriptions", map[string]any{"name": "p", "delivery_mode": "pull"}, &sub)
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		field        string
	}{
		{"POST", "/v1/subscriptions", map[string]any{"name": "x", "delivery_mode": "pull", "url": "https://example.com/"}, 400, "url"},
		{"POST", "/v1/subscriptions", map[string]any{"name": "x", "delivery_mode": "poll"}, 400, "delivery_mode"},
		{"POST", "/v1/subscriptions", map[string]any{"name": "x", "url": "https://example.com/", "failure_policy": "drop"}, 400, "failure_policy"},
		{"POST", "/v1/subscriptions", map[string]any{"name": "x", "url": "https://example.com/", "retry_policy": map[string]any{"then": "retry"}}, 400, "retry_policy.then"},
		{"PATCH", "/v1/subscriptions/" + sub.ID, map[string]any{"delivery_mode": "push"}, 400, "delivery_mode"},
		{"PATCH", "/v1/subscriptions/" + sub.ID, map[string]any{"url": "https://example.com/"}, 400, "url"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/receive", map[string]any{"max_events": 0}, 400, "max_events"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/receive", map[string]any{"max_wait": "61s"}, 400, "max_wait"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/receive", map[string]any{"lock_duration": "5s"}, 400, "lock_duration"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/acknowledge", map[string]any{"lock_tokens": []string{}}, 400, "lock_tokens"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/acknowledge", map[string]any{"lock_tokens": []string{"nodot"}}, 400, "lock_tokens[0]"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/release", map[string]any{"lock_tokens": []string{"a.b"}, "delay": "5s"}, 400, "delay"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/acknowledge", map[string]any{"lock_tokens": []string{"a.b"}, "delay": "10s"}, 400, "delay"},
		{"POST", "/v1/subscriptions/" + sub.ID + "/reactivate", nil, 409, ""},
	} {
		var p struct{ Field string }
		code, raw := b.do(c.method, c.path, c.body, nil)
		_ = json.Unmarshal(raw, &p)
		if code != c.code || p.Field != c.field {
			t.Errorf("%s %s %v: %d %s, want %d naming %q", c.method, c.path, c.body, code, raw, c.code, c.field)
		}
	}
}

// TestReceiveWokenAcrossNodes: two nodes on one PostgreSQL database. A
// receive waiting on node B (its fake clock does not move, so only a
// notification can end the wait early) returns the event published through
// node A.
func TestReceiveWokenAcrossNodes(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url }
	a := setup(t, onPG)
	bn := setup(t, onPG)
	var sub struct{ ID string }
	if code, raw := a.do("POST", "/v1/subscriptions", map[string]any{"name": "p", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	got := make(chan []receivedItem, 1)
	go func() {
		var out struct{ Data []receivedItem }
		bn.do("POST", "/v1/subscriptions/"+sub.ID+"/receive", map[string]any{"max_wait": "60s"}, &out)
		got <- out.Data
	}()
	eventually(t, "node B's receive waiting", func() bool { return bn.srv.API.Queue.(interface{ Waiting() int }).Waiting() == 1 })
	a.publish("from-a", "t")
	select {
	case items := <-got:
		if len(items) != 1 {
			t.Fatalf("node B's receive got %d", len(items))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node B's waiting receive was not woken by node A's publish")
	}
}

// TestFailurePolicyDefaultsToTheAccounts: a subscription made without a
// failure_policy takes its account's setting.
func TestFailurePolicyDefaultsToTheAccounts(t *testing.T) {
	b := setup(t)
	var acc struct{ ID string }
	if code, raw := b.do("POST", "/v1/accounts", map[string]any{"name": "queuer", "settings": map[string]any{"failure_policy": "queue"}}, &acc); code != 201 {
		t.Fatalf("create account: %d %s", code, raw)
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/subscriptions?account_id=" + acc.ID, "queue"},
		{"/v1/subscriptions", "retry"}, // acc_default's setting
	} {
		var sub struct {
			FailurePolicy string `json:"failure_policy"`
		}
		if code, raw := b.do("POST", c.path, map[string]any{"name": "s", "url": "http://127.0.0.1:1/"}, &sub); code != 201 || sub.FailurePolicy != c.want {
			t.Fatalf("POST %s: %d %s, want failure_policy %s", c.path, code, raw, c.want)
		}
	}
}

// receiveHeapGrowth bounds how much the live heap grows while
// TestReceiveBoundedInBytesAndMemory receives: an answer holds at most
// 4 MiB of events, each in memory once (as read from the store) and one at a
// time as JSON. Built whole, the first answer alone held all 24 events,
// twice (the store's rows and the encoded answer).
const receiveHeapGrowth = 24 << 20

// TestReceiveBoundedInBytesAndMemory publishes 24 events of about 1 MB to
// a pull subscription and receives with max_events 1000 until every one
// came, on a clock that does not move (so a lock never ends): every answer
// is at most api.MaxReceiveBytes on the wire (four events here: a fifth
// would bring it past 4 MiB), the events an answer leaves out are not
// locked (the next receive gets them, so every event comes exactly once),
// and the live heap stays bounded while the receives run.
func TestReceiveBoundedInBytesAndMemory(t *testing.T) {
	b := setup(t)
	var sub struct{ ID string }
	if code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "big", "delivery_mode": "pull"}, &sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	data := strings.Repeat("x", bigData)
	var eventBytes int
	for i := range bigEvents {
		ev := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"big-%02d","source":"/test","type":"big","data":%q}`, i, data))
		eventBytes = max(eventBytes, len(ev))
		if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			t.Fatalf("publish %d: %d %s", i, code, raw)
		}
	}
	perAnswer := api.MaxReceiveBytes / eventBytes // four: their envelopes fit in the rest
	maxAnswer := int64(api.MaxReceiveBytes)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	peak := watchLiveHeap()
	seen := map[string]int{}
	for call := 1; len(seen) < bigEvents; call++ {
		if call > bigEvents {
			t.Fatalf("%d receives got %d of %d events: the others are locked without being answered", call-1, len(seen), bigEvents)
		}
		req, err := http.NewRequest("POST", b.api.URL+"/v1/subscriptions/"+sub.ID+"/receive", strings.NewReader(`{"max_events": 1000}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		ans, err := streamAnswer(b.client, req, func(dec *json.Decoder) (string, error) {
			var item struct {
				DeliveryID string `json:"delivery_id"`
				Event      struct {
					ID   string `json:"id"`
					Data string `json:"data"`
				} `json:"event"`
			}
			if err := dec.Decode(&item); err != nil {
				return "", err
			}
			if len(item.Event.Data) != bigData {
				return "", fmt.Errorf("delivery %s with %d bytes of data, want %d", item.DeliveryID, len(item.Event.Data), bigData)
			}
			return item.Event.ID, nil
		})
		if err != nil {
			t.Fatalf("receive %d: %v", call, err)
		}
		if ans.bytes > maxAnswer {
			t.Errorf("receive %d: %d bytes, over %d", call, ans.bytes, maxAnswer)
		}
		if want := min(perAnswer, bigEvents-len(seen)); len(ans.ids) != want {
			t.Errorf("receive %d: %d events with %d not received yet, want %d", call, len(ans.ids), bigEvents-len(seen), want)
		}
		for _, id := range ans.ids {
			seen[id]++
		}
	}
	top := peak()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
	if got := receive(b, sub.ID, map[string]any{"max_events": 1000}); len(got) != 0 {
		t.Errorf("%d events received again while locked", len(got))
	}
	growth := int64(top) - int64(before)
	t.Logf("%d receives; live heap peak %+.1f MiB over %d MiB before (bound %d MiB)", len(seen), float64(growth)/(1<<20), before>>20, receiveHeapGrowth>>20)
	if growth > receiveHeapGrowth {
		t.Errorf("live heap grew %d MiB while receiving, over %d MiB", growth>>20, receiveHeapGrowth>>20)
	}
}
