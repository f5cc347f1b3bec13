package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite/disktest"
)

// Phases of the store under an awayLoad.
const (
	storeUp   = iota // before the store went away
	storeAway        // certainly away: stopped, or the disk full
	storeBack        // being brought back, and after
)

// awayLoad publishes continuously to one Herald, batches of a few events
// from several publishers, and keeps every answer by the phase of the
// store at the request's start and end.
type awayLoad struct {
	t        *testing.T
	h        *herald
	phase    atomic.Int32
	next     atomic.Int64
	stopping atomic.Bool
	done     sync.WaitGroup

	mu         sync.Mutex
	acked      map[string]bool // answered 202: must be delivered
	refused    map[string]bool // answered 503: may have been committed all the same
	bad        []string        // answers that are neither
	awayAnswer int             // answers to requests begun and ended while away
	ackedAfter int             // 202s to requests begun after the store was back
}

// startAwayLoad starts publishers publishers.
func startAwayLoad(t *testing.T, h *herald, publishers int) *awayLoad {
	l := &awayLoad{t: t, h: h, acked: map[string]bool{}, refused: map[string]bool{}}
	for range publishers {
		l.done.Go(func() {
			for !l.stopping.Load() {
				l.publishOne(context.Background())
			}
		})
	}
	t.Cleanup(l.stop)
	return l
}

// stop stops the publishers and waits for their last answers (each
// request is answered: none is cut short, whose events could then arrive
// unaccounted for).
func (l *awayLoad) stop() {
	l.stopping.Store(true)
	l.done.Wait()
}

// publishOne publishes a batch of 4 new events and records the answer.
func (l *awayLoad) publishOne(ctx context.Context) {
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = fmt.Sprintf("ev-%06d", l.next.Add(1))
	}
	evs := make([]cloudEvent, len(ids))
	for i, id := range ids {
		evs[i] = cloudEvent{SpecVersion: "1.0", ID: id, Source: "/away", Type: "t", DataContentType: "application/json", Data: map[string]any{"id": id}}
	}
	body, _ := json.Marshal(evs)
	began := l.phase.Load()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, l.h.base+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/cloudevents-batch+json")
	resp, err := l.h.client.Do(req)
	if err != nil {
		l.note(began, fmt.Sprintf("transport error: %v", err), ids)
		return
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ended := l.phase.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case resp.StatusCode == http.StatusAccepted:
		for _, id := range ids {
			l.acked[id] = true
		}
		if began == storeBack {
			l.ackedAfter++
		}
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "5" &&
		resp.Header.Get("Content-Type") == "application/problem+json":
		for _, id := range ids {
			l.refused[id] = true
		}
	default:
		l.bad = append(l.bad, fmt.Sprintf("phase %d→%d: %d Retry-After %q %s", began, ended, resp.StatusCode, resp.Header.Get("Retry-After"), bytes.TrimSpace(raw)))
	}
	if began == storeAway && ended == storeAway {
		l.awayAnswer++
		if resp.StatusCode != http.StatusServiceUnavailable {
			l.bad = append(l.bad, fmt.Sprintf("while the store was away: %d %s, want 503", resp.StatusCode, bytes.TrimSpace(raw)))
		}
	}
}

// note records an answer that is not one (a transport error).
func (l *awayLoad) note(phase int32, what string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bad = append(l.bad, fmt.Sprintf("phase %d: %s", phase, what))
	for _, id := range ids {
		l.refused[id] = true
	}
}

// waitAcked waits until n events were acknowledged, the store still up.
func (l *awayLoad) waitAcked(n int) {
	waitFor(l.t, 30*time.Second, fmt.Sprintf("%d events acknowledged", n), func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked) >= n, fmt.Sprintf("%d acknowledged", len(l.acked))
	})
}

// waitAway waits until n answers came while the store was away.
func (l *awayLoad) waitAway(n int) {
	waitFor(l.t, 60*time.Second, fmt.Sprintf("%d publish answers while the store is away", n), func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.awayAnswer >= n, fmt.Sprintf("%d answers, %d bad", l.awayAnswer, len(l.bad))
	})
}

// waitBack waits until n publishes begun after the store came back were
// acknowledged.
func (l *awayLoad) waitBack(n int) {
	waitFor(l.t, 60*time.Second, fmt.Sprintf("%d publishes acknowledged after the store came back", n), func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.ackedAfter >= n, fmt.Sprintf("%d acknowledged, %d bad", l.ackedAfter, len(l.bad))
	})
}

// checkReadyzAway checks that /readyz answers 503, not ready, with a
// reason.
func checkReadyzAway(t *testing.T, h *herald, reason string) {
	t.Helper()
	resp, err := h.client.Get(h.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(string(raw), "not ready: the store does not answer: the store is unavailable") || !strings.Contains(string(raw), reason) {
		t.Errorf("/readyz while the store is away: %d Retry-After %q %s\nwant 503, not ready, saying %q", resp.StatusCode, resp.Header.Get("Retry-After"), raw, reason)
	}
	t.Logf("/readyz while the store is away: %s", bytes.TrimSpace(raw))
}

// checkDelivered stops the load and checks that every acknowledged event
// arrives at the receiver, exactly once, and that nothing arrives that
// was not published.
func (l *awayLoad) checkDelivered(rcv *receiver) {
	l.t.Helper()
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range head(l.bad, 10) {
		l.t.Errorf("publish answer: %s", b)
	}
	acked := make([]string, 0, len(l.acked))
	known := map[string]bool{}
	for id := range l.acked {
		acked = append(acked, id)
		known[id] = true
	}
	for id := range l.refused {
		known[id] = true
	}
	sort.Strings(acked)
	waitFor(l.t, 90*time.Second, fmt.Sprintf("all %d acknowledged events at the receiver", len(acked)), func() (bool, string) {
		miss := rcv.missing(acked)
		return len(miss) == 0, fmt.Sprintf("%d missing, e.g. %v", len(miss), head(miss, 5))
	})
	rcv.waitIdle(l.t, 30*time.Second)
	if extra := rcv.unexpected(known); len(extra) > 0 {
		l.t.Errorf("%d events arrived that were never published, e.g. %v", len(extra), head(extra, 5))
	}
	st := rcv.stats()
	if st.Duplicates > 0 {
		l.t.Errorf("%d events arrived more than once (%d extra pushes)", st.DuplicatedIDs, st.Duplicates)
	}
	l.t.Logf("%d events acknowledged (%d batches after the store came back), %d refused with 503 (of which %d arrived all the same: committed before the answer was lost), %d answers while away",
		len(acked), l.ackedAfter, len(l.refused), st.Distinct-len(acked), l.awayAnswer)
}

// TestPostgresStoppedUnderLoad runs herald on a PostgreSQL of the test's
// own and stops that server while publishers publish continuously: while
// it is down every answer is 503 problem+json with Retry-After (no 500)
// and /readyz is not ready, saying why; once it is started again the same
// process acknowledges publishes without a restart, and every event it
// acknowledged, before or after, arrives at a real receiver exactly once.
func TestPostgresStoppedUnderLoad(t *testing.T) {
	pg := pgtest.OwnServer(t)
	rcv := newReceiver(t, 0, false)
	h := startHerald(t, "herald", t.TempDir(), "--store", pg.URL(), "--db-max-conns", "8")
	h.createSubscription(t, "away", rcv.URL())
	load := startAwayLoad(t, h, 4)
	load.waitAcked(200)
	pg.Stop("immediate")
	load.phase.Store(storeAway)
	load.waitAway(50)
	checkReadyzAway(t, h, "connect")
	load.phase.Store(storeBack)
	pg.Start()
	load.waitBack(50)
	load.checkDelivered(rcv)
}

// TestSQLiteDiskFullUnderLoad runs herald with its SQLite file on a small
// filesystem of its own and fills it while publishers publish
// continuously: once the disk is full every answer is 503 problem+json
// with Retry-After (no 500) and /readyz is not ready, saying why; once
// space is freed the same process acknowledges publishes again without a
// restart, and every event it acknowledged arrives exactly once.
func TestSQLiteDiskFullUnderLoad(t *testing.T) {
	dir := disktest.Small(t, 48<<20)
	rcv := newReceiver(t, 0, false)
	h := startHerald(t, "herald", dir)
	h.createSubscription(t, "away", rcv.URL())
	load := startAwayLoad(t, h, 4)
	load.waitAcked(200)
	free := disktest.Fill(t, dir)
	waitFor(t, 60*time.Second, "/readyz to say the store is unavailable", func() (bool, string) {
		resp, err := h.client.Get(h.base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable, resp.Status
	})
	load.phase.Store(storeAway)
	load.waitAway(50)
	checkReadyzAway(t, h, "database or disk is full")
	load.phase.Store(storeBack)
	free()
	load.waitBack(50)
	load.checkDelivered(rcv)
}
