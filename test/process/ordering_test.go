package process

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// keyedReceiver is a subscriber endpoint on loopback for ordered
// deliveries: per partitionkey it keeps the seqs (data.seq) it answered
// 200, in the order it answered them, and the most pushes of one key it
// had at once. Each push is answered after delay (a connection that goes
// away first, Herald killed, is not counted), so that pushes are in flight
// when Herald is killed.
type keyedReceiver struct {
	srv   *httptest.Server
	delay time.Duration

	mu          sync.Mutex
	seqs        map[string][]int
	inFlight    map[string]int
	maxInFlight map[string]int
	total       int
	busy        int
}

func newKeyedReceiver(t testing.TB, delay time.Duration) *keyedReceiver {
	kr := &keyedReceiver{delay: delay, seqs: map[string][]int{}, inFlight: map[string]int{}, maxInFlight: map[string]int{}}
	kr.srv = httptest.NewServer(http.HandlerFunc(kr.serve))
	t.Cleanup(kr.srv.Close)
	return kr
}

func (kr *keyedReceiver) serve(w http.ResponseWriter, req *http.Request) {
	var ev struct {
		PartitionKey string `json:"partitionkey"`
		Data         struct{ Seq int }
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil || json.Unmarshal(body, &ev) != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	kr.mu.Lock()
	kr.busy++
	kr.inFlight[ev.PartitionKey]++
	kr.maxInFlight[ev.PartitionKey] = max(kr.maxInFlight[ev.PartitionKey], kr.inFlight[ev.PartitionKey])
	kr.mu.Unlock()
	tm := time.NewTimer(kr.delay)
	defer tm.Stop()
	answered := false
	select {
	case <-tm.C:
		answered = true
	case <-req.Context().Done():
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.busy--
	kr.inFlight[ev.PartitionKey]--
	if answered {
		kr.seqs[ev.PartitionKey] = append(kr.seqs[ev.PartitionKey], ev.Data.Seq)
		kr.total++
		w.WriteHeader(http.StatusOK)
	}
}

// counts returns how many pushes it answered 200, how many distinct
// (key, seq) pairs those were, and how many pushes it is handling.
func (kr *keyedReceiver) counts() (total, distinct, busy int) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for _, seqs := range kr.seqs {
		distinct += len(slices.Compact(slices.Clone(seqs)))
	}
	return kr.total, distinct, kr.busy
}

// Sizes of the SIGKILL tests of ordered delivery.
const killKeys, killPerKey = 40, 25

// TestSIGKILLKeepsKeyOrder publishes 40 keys × 25 events to a subscription
// with "ordering": "key", SIGKILLs Herald while their deliveries arrive,
// starts it again on the same data directory, and requires every event to
// arrive, each key's in publish order (a push whose outcome the kill lost
// may come again, right after itself: at-least-once), never two of a key
// at once.
func TestSIGKILLKeepsKeyOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	dataDir := t.TempDir()
	h1 := startHerald(t, "herald-1", dataDir, serveFlags...)
	killMidKeys(t, h1, func(rcv *keyedReceiver) *herald {
		// The killed process's pushes end (aborted) before the restart's.
		waitFor(t, 5*time.Second, "the receiver idle after the SIGKILL", func() (bool, string) {
			_, _, busy := rcv.counts()
			return busy == 0, fmt.Sprintf("%d pushes in flight", busy)
		})
		return startHerald(t, "herald-2", dataDir, serveFlags...)
	})
}

// TestSIGKILLKeepsKeyOrderAcrossNodes is TestSIGKILLKeepsKeyOrder on two
// nodes sharing a PostgreSQL schema (3 s leases): node 1 is killed, and
// node 2, delivering beside it all along, takes over its deliveries once
// their leases end, keeping every key's order.
func TestSIGKILLKeepsKeyOrderAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	dbURL := pgtest.SchemaURL(t)
	flags := append([]string{"--lease", "3s"}, serveFlags...)
	n1 := startNode(t, "node-1", dbURL, flags...)
	n2 := startNode(t, "node-2", dbURL, flags...)
	killMidKeys(t, n1, func(*keyedReceiver) *herald { return n2 })
}

// killMidKeys runs the SIGKILL tests of ordered delivery: it subscribes a
// keyedReceiver through h1 with ordering key, publishes killKeys keys ×
// killPerKey events through it, SIGKILLs it once a fifth have arrived,
// and checks through next() (a restart, or another node) that every event
// arrives, each key's in order, never two of a key at once.
func killMidKeys(t *testing.T, h1 *herald, next func(*keyedReceiver) *herald) {
	t.Helper()
	total := killKeys * killPerKey
	rcv := newKeyedReceiver(t, 3*time.Millisecond)
	subID := h1.createSubscriptionWith(t, "process-ordered", rcv.srv.URL+"/hook", map[string]any{"ordering": "key"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range killPerKey {
		evs := make([]map[string]any, killKeys)
		for k := range evs {
			evs[k] = map[string]any{"specversion": "1.0", "id": fmt.Sprintf("ord-%02d-%03d", k, i), "source": "/load", "type": "t",
				"partitionkey": fmt.Sprintf("k%02d", k), "data": map[string]any{"seq": i}}
		}
		body, _ := json.Marshal(evs)
		if code, err := h1.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents-batch+json", body, nil); err != nil || code != http.StatusAccepted {
			t.Fatalf("publishing round %d: %d, %v", i, code, err)
		}
	}
	waitFor(t, 30*time.Second, "a fifth of the events delivered", func() (bool, string) {
		_, distinct, _ := rcv.counts()
		return distinct >= total/5, fmt.Sprintf("%d delivered", distinct)
	})
	h1.kill()
	if _, distinct, _ := rcv.counts(); distinct >= total {
		t.Fatalf("all %d events arrived before the SIGKILL: the test did not kill Herald mid-delivery", distinct)
	}
	h2 := next(rcv)
	waitFor(t, 60*time.Second, "every event delivered after the SIGKILL", func() (bool, string) {
		_, distinct, _ := rcv.counts()
		return distinct == total, fmt.Sprintf("%d of %d delivered", distinct, total)
	})
	waitNonePending(t, h2, subID, 30*time.Second)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for key, seqs := range rcv.seqs {
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != killPerKey {
			t.Errorf("key %s received %v: want 0 … %d in order (a push repeated right after itself at most)", key, seqs, killPerKey-1)
		}
		if rcv.maxInFlight[key] > 1 {
			t.Errorf("key %s had %d pushes in flight at once", key, rcv.maxInFlight[key])
		}
	}
	t.Logf("%d pushes for %d events", rcv.total, total)
}
