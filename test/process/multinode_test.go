package process

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// The tests in this file run several herald processes on one PostgreSQL
// schema, splitting the work between them (nodes claim due deliveries with a
// lease; a dead node's leases expire and the others take its work; endpoint
// health is shared through the database). They need
// HERALD_TEST_POSTGRES_URL; without it pgtest skips them (and fails them
// under CI=true).

// startNode starts `herald serve` on the shared store dbURL with the node id
// name (which is also the name its leases carry in the database) and a data
// directory of its own, which the PostgreSQL store leaves unused.
// Its database sessions are named herald-NAME (application_name), so that
// a test can see when a killed node's sessions are gone (nodeSessions).
func startNode(t *testing.T, name, dbURL string, extra ...string) *herald {
	t.Helper()
	args := append([]string{"--store", withApplicationName(t, dbURL, "herald-"+name), "--node-id", name, "--db-max-conns", "8"}, extra...)
	return startHerald(t, name, t.TempDir(), args...)
}

// withApplicationName returns the PostgreSQL connection string dbURL (a
// URL, or keyword/value pairs) with application_name set to name.
func withApplicationName(t *testing.T, dbURL, name string) string {
	t.Helper()
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return dbURL + " application_name=" + name
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// nodeSessions counts the database sessions of node name (see startNode).
func nodeSessions(dbURL, name string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "herald-"+name).Scan(&n)
	return n, err
}

// pushTracker observes the pushes around a receiver by their webhook-id (the
// delivery id, stable across attempts) and, given senders, by the node that
// sent them: how many are open at the same moment (from arrival until the
// handler answers), which were answered 200, how often and by whom, and the
// herald-delivery-attempt numbers of the answered ones.
type pushTracker struct {
	senders *senders // nil: pushes are not attributed (node "")

	mu            sync.Mutex
	open          map[string]int // webhook-id → pushes open now
	maxOpen       int            // most pushes of one webhook-id open at once
	maxOpenID     string
	openByNode    map[string]int       // node → pushes open now
	maxOpenByNode map[string]int       // node → most pushes open at once
	answered      map[string]int       // webhook-id → pushes answered 200
	firstAt       map[string]time.Time // webhook-id → when first answered 200
	from          map[string][]string  // webhook-id → senders of the pushes answered 200, in order
	receipts      int                  // pushes answered 200
	byNode        map[string]int       // node → pushes answered 200
	byAttempt     map[string]int       // herald-delivery-attempt → pushes answered 200
}

func newPushTracker(s *senders) *pushTracker {
	return &pushTracker{
		senders: s, open: map[string]int{}, openByNode: map[string]int{}, maxOpenByNode: map[string]int{},
		answered: map[string]int{}, firstAt: map[string]time.Time{}, from: map[string][]string{},
		byNode: map[string]int{}, byAttempt: map[string]int{},
	}
}

// wrap is the receiver's handler wrapper (see newWrappedReceiver).
func (p *pushTracker) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("webhook-id")
		attempt := req.Header.Get("herald-delivery-attempt")
		node := ""
		if p.senders != nil {
			node = p.senders.of(req)
		}
		p.mu.Lock()
		p.open[id]++
		if n := p.open[id]; n > p.maxOpen {
			p.maxOpen, p.maxOpenID = n, id
		}
		p.openByNode[node]++
		p.maxOpenByNode[node] = max(p.maxOpenByNode[node], p.openByNode[node])
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			if p.open[id]--; p.open[id] == 0 {
				delete(p.open, id)
			}
			p.openByNode[node]--
			p.mu.Unlock()
		}()
		next.ServeHTTP(&answerHook{ResponseWriter: w, on: func(code int) {
			if code != http.StatusOK {
				return
			}
			p.mu.Lock()
			if p.answered[id]++; p.answered[id] == 1 {
				p.firstAt[id] = time.Now()
			}
			p.from[id] = append(p.from[id], node)
			p.receipts++
			p.byNode[node]++
			p.byAttempt[attempt]++
			p.mu.Unlock()
		}}, req)
	})
}

// answerHook calls on with the status code the handler answers, before it
// is written. A push the handler gives up on (its client went away) writes
// nothing through it and is not seen.
type answerHook struct {
	http.ResponseWriter
	on    func(code int)
	wrote bool
}

func (a *answerHook) WriteHeader(code int) {
	if !a.wrote {
		a.wrote = true
		a.on(code)
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerHook) Write(b []byte) (int, error) {
	if !a.wrote {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

// trackerStats is a snapshot of a pushTracker.
type trackerStats struct {
	Receipts      int      // pushes answered 200
	Distinct      int      // distinct webhook-ids answered 200
	Duplicated    []string // webhook-ids answered 200 more than once, sorted
	MostOften     int      // most receipts of one webhook-id
	MaxOpen       int      // most pushes of one webhook-id open at once
	MaxOpenID     string
	OpenByNode    map[string]int // pushes open now, by sender
	MaxOpenByNode map[string]int // most pushes open at once, by sender
	ByNode        map[string]int // pushes answered 200, by sender
	ByAttempt     map[string]int // pushes answered 200, by herald-delivery-attempt
}

func (p *pushTracker) stats() trackerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := trackerStats{
		Receipts: p.receipts, Distinct: len(p.answered), MaxOpen: p.maxOpen, MaxOpenID: p.maxOpenID,
		OpenByNode: maps.Clone(p.openByNode), MaxOpenByNode: maps.Clone(p.maxOpenByNode),
		ByNode: maps.Clone(p.byNode), ByAttempt: maps.Clone(p.byAttempt),
	}
	for id, n := range p.answered {
		if n > 1 {
			s.Duplicated = append(s.Duplicated, id)
		}
		s.MostOften = max(s.MostOften, n)
	}
	sort.Strings(s.Duplicated)
	return s
}

// answeredAmong returns the webhook-ids of ids answered 200 at least once,
// with the time of the first answer.
func (p *pushTracker) answeredAmong(ids []string) map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Time{}
	for _, id := range ids {
		if p.answered[id] > 0 {
			out[id] = p.firstAt[id]
		}
	}
	return out
}

// sendersOf returns who sent the answered pushes of webhook-id id, in order.
func (p *pushTracker) sendersOf(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.from[id])
}

// senders attributes pushes to the herald process that sent them, since
// nothing in a push names its node: the client end of the push's connection
// is looked up in /proc/net/tcp, then the process holding that socket in
// /proc/PID/fd (Linux; loopback IPv4). A push it cannot attribute is "?".
type senders struct {
	mu     sync.Mutex
	pids   map[int]string    // pid → node name
	byAddr map[string]string // client address of a connection → node name
}

func newSenders() *senders { return &senders{pids: map[int]string{}, byAddr: map[string]string{}} }

// add makes h's pushes attributable to h.name.
func (s *senders) add(h *herald) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids[h.cmd.Process.Pid] = h.name
}

func (s *senders) of(req *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.byAddr[req.RemoteAddr]; ok {
		return n
	}
	client, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return "?"
	}
	la, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil {
		return "?"
	}
	server, err := netip.ParseAddrPort(la.String())
	if err != nil {
		return "?"
	}
	tab, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return "?"
	}
	// Columns: sl local_address rem_address st ... uid timeout inode; the
	// client's socket has the client port locally and the server's remotely.
	socket := ""
	for _, line := range strings.Split(string(tab), "\n") {
		f := strings.Fields(line)
		if len(f) >= 10 && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", client.Port())) &&
			strings.HasSuffix(f[2], fmt.Sprintf(":%04X", server.Port())) {
			socket = "socket:[" + f[9] + "]"
			break
		}
	}
	if socket == "" {
		return "?"
	}
	for pid, name := range s.pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, _ := os.Readlink(dir + "/" + fd.Name()); l == socket {
				s.byAddr[req.RemoteAddr] = name
				return name
			}
		}
	}
	return "?"
}

// publishTolerant posts ids as one batch, like publish, but also accepts
// events answered as duplicates (with no delivery): the answer to a batch
// published again after the node that took it first died. It returns how
// many were duplicates.
func (h *herald) publishTolerant(ctx context.Context, ids []string) (int, error) {
	res, err := h.publishRaw(ctx, ids)
	if err != nil {
		return 0, err
	}
	dups := 0
	for i, e := range res.Events {
		switch {
		case e.ID != ids[i]:
			return dups, fmt.Errorf("publish: answer %d is for %s, want %s", i, e.ID, ids[i])
		case e.Duplicate && e.Deliveries == 0:
			dups++
		case !e.Duplicate && e.Deliveries == 1:
		default:
			return dups, fmt.Errorf("publish: answer for %s is %+v, want a duplicate with no delivery or a new event with 1", ids[i], e)
		}
	}
	return dups, nil
}

// publishRaw posts ids as one application/cloudevents-batch+json request and
// returns the answer, which must be a 202 listing as many events.
func (h *herald) publishRaw(ctx context.Context, ids []string) (publishResult, error) {
	return h.publishTyped(ctx, "t", ids)
}

// publishTyped is publishRaw for events of type typ.
func (h *herald) publishTyped(ctx context.Context, typ string, ids []string) (publishResult, error) {
	evs := make([]cloudEvent, len(ids))
	for i, id := range ids {
		evs[i] = cloudEvent{
			SpecVersion: "1.0", ID: id, Source: "/load", Type: typ,
			DataContentType: "application/json", Data: map[string]any{"id": id},
		}
	}
	var res publishResult
	body, err := json.Marshal(evs)
	if err != nil {
		return res, err
	}
	code, err := h.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents-batch+json", body, &res)
	if err != nil {
		return res, err
	}
	if code != http.StatusAccepted {
		return res, fmt.Errorf("publish: status %d, want 202", code)
	}
	if len(res.Events) != len(ids) {
		return res, fmt.Errorf("publish: answer lists %d events, want %d", len(res.Events), len(ids))
	}
	return res, nil
}

// metric returns the value of the sample `series` (name and labels exactly
// as exposed, e.g. `herald_deliveries_finished_total{status="delivered"}`)
// from GET /metrics; 0 when it is absent.
func (h *herald) metric(ctx context.Context, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, sc.Err()
}

const deliveredSeries = `herald_deliveries_finished_total{status="delivered"}`

// metricNow is metric with a context of its own.
func (h *herald) metricNow(series string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.metric(ctx, series)
}

// waitMetric waits (10 s at most) until h's sample series is at least
// atLeast and returns it. A counter Herald increments after the commit it
// counts can lag what the store already shows.
func waitMetric(t *testing.T, h *herald, series string, atLeast float64) float64 {
	t.Helper()
	var v float64
	waitFor(t, 10*time.Second, h.name+"'s "+series+" to reach "+strconv.FormatFloat(atLeast, 'f', -1, 64), func() (bool, string) {
		var err error
		if v, err = h.metricNow(series); err != nil {
			return false, err.Error()
		}
		return v >= atLeast, fmt.Sprintf("it is %.0f", v)
	})
	return v
}

// heldBy returns the ids of the pending deliveries whose lease owner is
// owner: what that node had claimed (in memory or in flight) and not yet
// recorded. It reads the PostgreSQL store's deliveries table directly
// (internal/store/postgres/migrations): no API shows leases.
func heldBy(dbURL, owner string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx,
		`SELECT id FROM deliveries WHERE status = 'pending' AND lease_owner = $1 AND lease_until <> 0`, owner)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// The workload of TestThreeNodesSurviveOneSIGKILL.
const (
	threeTotal      = 10_000
	threeBatch      = 100
	threePublishers = 6
	// Until the kill, batch b is published only once the receiver has
	// (b×batch − ahead) events, so publishing is still going on when
	// node 2 dies, and goes on to the survivors after.
	threeAhead  = 2_000
	threeKillAt = 3_000 // distinct events received before the SIGKILL
	// Per-endpoint concurrency of every node: with one subscription, a
	// node has at most this many pushes open at once.
	threeConcurrency = 16
	// An outcome waits for its group commit after the push; one that
	// waited longer than this when node 2 died means the record path
	// stalled.
	threeMaxCommitLag = 5 * time.Second
	// A short lease: the survivors take over node 2's deliveries 5 s
	// after the kill instead of 30 s.
	threeLease = 5 * time.Second
)

// threeNodes is one run of TestThreeNodesSurviveOneSIGKILL: three nodes on
// one database serving one subscription, the receiver its pushes go to
// (with a tracker of who pushed what) and the events published across them.
type threeNodes struct {
	t         *testing.T
	dbURL     string
	tr        *pushTracker
	rcv       *receiver
	nodes     []*herald // node-1, node-2 (the one SIGKILLed), node-3
	survivors []*herald // node-1, node-3
	subID     string
	ids       []string        // the events, in publishing order
	known     map[string]bool // the events, as a set
	pub       failoverPublishers
	began     time.Time // the first publish
}

// failoverPublishers is the state the publishers of a threeNodes share.
type failoverPublishers struct {
	wg      sync.WaitGroup
	killed  chan struct{} // closed just before node 2 is SIGKILLed
	mu      sync.Mutex
	errs    []string
	perNode [3]atomic.Int64 // batches acknowledged, by node
	cutOff  atomic.Int64    // batches whose publish to node 2 failed at the kill
	reDups  atomic.Int64    // events of those a survivor answered as duplicates
}

func (p *failoverPublishers) isKilled() bool {
	select {
	case <-p.killed:
		return true
	default:
		return false
	}
}

// fail records a publisher's failure; the test reports it once the
// publishers have stopped.
func (p *failoverPublishers) fail(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
}

// acked is the number of batches acknowledged by any node.
func (p *failoverPublishers) acked() int64 {
	return p.perNode[0].Load() + p.perNode[1].Load() + p.perNode[2].Load()
}

// startThreeNodes starts the receiver and the three nodes, node-1 first
// with the subscription, and names the events.
func startThreeNodes(t *testing.T) *threeNodes {
	f := &threeNodes{t: t}
	f.pub.killed = make(chan struct{})
	f.dbURL = pgtest.SchemaURL(t) // first: its cleanup (DROP SCHEMA) runs after the nodes are killed
	from := newSenders()
	f.tr = newPushTracker(from)
	f.rcv = newWrappedReceiver(t, 5*time.Millisecond, false, f.tr.wrap)
	// --window 1000: a node holds at most 1,000 fresh deliveries from its
	// publishes; the rest wait in the store for any node's due loader.
	flags := []string{"--endpoint-max-concurrency", strconv.Itoa(threeConcurrency), "--window", "1000", "--lease", threeLease.String()}
	n1 := startNode(t, "node-1", f.dbURL, flags...)
	// Created before the other nodes start, so that they load it at start
	// rather than at their next catalog reload.
	f.subID = n1.createSubscription(t, "multinode-sigkill", f.rcv.URL())
	n2 := startNode(t, "node-2", f.dbURL, flags...)
	n3 := startNode(t, "node-3", f.dbURL, flags...)
	f.nodes = []*herald{n1, n2, n3}
	f.survivors = []*herald{n1, n3}
	for _, h := range f.nodes {
		from.add(h)
	}

	f.ids = make([]string, threeTotal)
	f.known = make(map[string]bool, threeTotal)
	for i := range f.ids {
		f.ids[i] = fmt.Sprintf("mn-%05d", i)
		f.known[f.ids[i]] = true
	}
	return f
}

// startPublishers starts the publishers: batch b goes to node b%3 (to a
// survivor once node 2 is killed), each until the batches run out.
func (f *threeNodes) startPublishers(ctx context.Context) {
	batches := make(chan int, threeTotal/threeBatch)
	for b := range threeTotal / threeBatch {
		batches <- b
	}
	close(batches)
	f.began = time.Now()
	for range threePublishers {
		f.pub.wg.Add(1)
		go func() {
			defer f.pub.wg.Done()
			f.publishBatches(ctx, batches)
		}()
	}
}

// publishBatches is one publisher's loop.
func (f *threeNodes) publishBatches(ctx context.Context, batches <-chan int) {
	p := &f.pub
	for b := range batches {
		if need := b*threeBatch - threeAhead; need > 0 {
			select {
			case <-f.rcv.reached(need):
			case <-p.killed:
			case <-ctx.Done():
				return
			}
		}
		part := f.ids[b*threeBatch : (b+1)*threeBatch]
		i := b % 3
		if i == 1 && p.isKilled() {
			i = []int{0, 2}[b%2]
		}
		err := f.nodes[i].publish(ctx, part)
		if err == nil {
			p.perNode[i].Add(1)
			continue
		}
		if i != 1 || !p.isKilled() {
			p.fail("publishing batch %d to %s: %v", b, f.nodes[i].name, err)
			return
		}
		// Node 2 died under this publish: it may or may not have
		// committed the batch. Publish it again to a survivor; what
		// node 2 committed comes back as duplicates and is
		// delivered once node 2's leases expire.
		p.cutOff.Add(1)
		s := []int{0, 2}[b%2]
		n, err := f.nodes[s].publishTolerant(ctx, part)
		if err != nil {
			p.fail("publishing batch %d again to %s after node-2 died: %v", b, f.nodes[s].name, err)
			return
		}
		p.reDups.Add(int64(n))
		p.perNode[s].Add(1)
	}
}

// killNode2 waits until threeKillAt events have arrived, then SIGKILLs node
// 2 (which must have database sessions) while publishing goes on, and
// returns when it did.
func (f *threeNodes) killNode2() time.Time {
	t := f.t
	select {
	case <-f.rcv.reached(threeKillAt):
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of %d events arrived within 60s; want %d before the SIGKILL", f.rcv.stats().Distinct, threeTotal, threeKillAt)
	}
	close(f.pub.killed)
	atKill := f.tr.stats()
	acked := f.pub.acked()
	if n, err := nodeSessions(f.dbURL, "node-2"); err != nil || n == 0 {
		t.Fatalf("node-2's database sessions before the SIGKILL: %d, %v; want some (application_name herald-node-2)", n, err)
	}
	killStart := time.Now()
	f.nodes[1].kill()
	t.Logf("SIGKILL of node-2 %s after the first publish: %d of %d events had arrived, %d of %d batches were acknowledged, node-2 had %d pushes open at the receiver",
		killStart.Sub(f.began).Round(time.Millisecond), atKill.Distinct, threeTotal, acked, threeTotal/threeBatch, atKill.OpenByNode["node-2"])
	if acked == threeTotal/threeBatch {
		t.Errorf("every batch was acknowledged before the SIGKILL: the kill did not come while publishing")
	}
	return killStart
}

// readNode2Held returns the deliveries node 2 had pushed and seen answered
// without recording the outcome when it died (with when each was first
// answered), and the oldest answer among them before the SIGKILL.
//
// What node 2 held when it died: its pending deliveries still leased to
// it. Leases run for threeLease and are renewed every third of it, so none
// expires (and can be taken over, leaving this list) until two thirds of
// a lease after the kill; the read must end within half a lease. The
// held deliveries the receiver has answered are those node 2
// pushed without recording the outcome: the sockets of a SIGKILLed
// process are closed by the time it is reaped, so no push of node 2 is
// answered after this.
// A commit node 2 sent before it died may still be running on its
// session (PostgreSQL ends a transaction whose COMMIT it received, and
// the session once that is done): the leases are read once node 2's
// sessions are gone, so that every outcome it committed is counted.
func (f *threeNodes) readNode2Held(killStart time.Time) (map[string]time.Time, time.Duration) {
	t := f.t
	waitFor(t, threeLease/4, "node-2's database sessions to end", func() (bool, string) {
		n, err := nodeSessions(f.dbURL, "node-2")
		return err == nil && n == 0, fmt.Sprintf("%d sessions, %v", n, err)
	})
	held, err := heldBy(f.dbURL, "node-2")
	if err != nil {
		t.Fatalf("reading node-2's leases: %v", err)
	}
	if d := time.Since(killStart); d > threeLease/2 {
		t.Fatalf("reading node-2's leases took until %s after the kill (lease %s); some may have been taken over already", d, threeLease)
	}
	// A push of node 2 the receiver was still handling when the sockets
	// closed ends now, answered or aborted.
	waitFor(t, 5*time.Second, "node-2's pushes at the receiver to end", func() (bool, string) {
		n := f.tr.stats().OpenByNode["node-2"]
		return n == 0, fmt.Sprintf("%d open", n)
	})
	unrecorded := f.tr.answeredAmong(held)
	var lag time.Duration // oldest answer among them, before the SIGKILL
	for _, at := range unrecorded {
		lag = max(lag, killStart.Sub(at))
	}
	t.Logf("node-2 held %d pending deliveries when it died; %d of them had been pushed and answered, their outcome not recorded (the oldest answer %s before the SIGKILL)",
		len(held), len(unrecorded), lag.Round(time.Millisecond))
	return unrecorded, lag
}

// waitPublishers waits for the publishers to finish and stops the test if
// any failed.
func (f *threeNodes) waitPublishers() {
	t, p := f.t, &f.pub
	stopped := make(chan struct{})
	go func() { p.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatalf("the publishers did not finish within 60s of the SIGKILL")
	}
	for _, e := range p.errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("batches acknowledged: node-1 %d, node-2 %d, node-3 %d; %d cut off by the kill and published again to a survivor, %d of their events answered as duplicates (node-2 had committed them)",
		p.perNode[0].Load(), p.perNode[1].Load(), p.perNode[2].Load(), p.cutOff.Load(), p.reDups.Load())
}

// checkEveryEventArrived waits for every event to arrive from the
// survivors, then requires Herald's delivered list to match the receiver
// and no event the test did not publish.
func (f *threeNodes) checkEveryEventArrived(killStart time.Time) {
	t := f.t
	waitFor(t, 120*time.Second, "every event to arrive from the survivors", func() (bool, string) {
		m := f.rcv.missing(f.ids)
		return len(m) == 0, fmt.Sprintf("%d of %d events never arrived, e.g. %v", len(m), threeTotal, head(m, 5))
	})
	t.Logf("all %d events arrived %s after the SIGKILL", threeTotal, time.Since(killStart).Round(time.Millisecond))
	checkSettled(t, f.nodes[0], f.subID, f.rcv, f.ids)
	if u := f.rcv.unexpected(f.known); len(u) > 0 {
		t.Errorf("the receiver got %d events never published, e.g. %v", len(u), head(u, 5))
	}
}

// checkReceipts logs what the receiver answered and requires every event
// answered; it returns the tracker's snapshot.
func (f *threeNodes) checkReceipts(unrecorded map[string]time.Time) trackerStats {
	t := f.t
	st, rs := f.tr.stats(), f.rcv.stats()
	t.Logf("receiver: %d pushes arrived, %d aborted by the SIGKILL, %d answered 200 for %d distinct deliveries; by herald-delivery-attempt %v; by node %v; most open at once by node %v",
		rs.Requests, rs.Aborted, st.Receipts, st.Distinct, st.ByAttempt, st.ByNode, st.MaxOpenByNode)
	t.Logf("duplicates: %d receipts beyond the first, over %d deliveries, e.g. %v; node-2's pushed-unrecorded deliveries: %d (--endpoint-max-concurrency %d)",
		st.Receipts-st.Distinct, len(st.Duplicated), head(st.Duplicated, 3), len(unrecorded), threeConcurrency)
	if st.Distinct != threeTotal {
		t.Errorf("%d distinct webhook-ids answered, want %d", st.Distinct, threeTotal)
	}
	return st
}

// checkDuplicates requires the duplicates to be exactly node 2's
// pushed-unrecorded deliveries: each pushed once by node 2, then once by
// the survivor that took it over. Their number is not bounded by
// --endpoint-max-concurrency alone: a node gives an endpoint slot back when
// the HTTP exchange ends, before the outcome's group commit, so the pushes
// it answered during the commit lag before its death are unrecorded too
// (node-2 pushes ≈ concurrency / 5 ms × lag). What bounds them is the lag,
// checked here against threeMaxCommitLag, and the set.
func (f *threeNodes) checkDuplicates(st trackerStats, unrecorded map[string]time.Time, lag time.Duration) {
	t := f.t
	var stray []string
	for _, id := range st.Duplicated {
		if _, ok := unrecorded[id]; !ok {
			stray = append(stray, id)
		}
	}
	if len(stray) > 0 {
		t.Errorf("%d deliveries arrived more than once though node-2 had not pushed them unrecorded when it died, e.g. %v", len(stray), head(stray, 5))
	}
	if n := st.Receipts - st.Distinct; n > len(unrecorded) {
		t.Errorf("%d duplicate receipts; want at most node-2's %d pushed-unrecorded deliveries", n, len(unrecorded))
	}
	if st.MostOften > 2 {
		t.Errorf("a delivery arrived %d times; after one node's death it may arrive twice at most", st.MostOften)
	}
	var notAgain []string
	for id := range unrecorded {
		if by := f.tr.sendersOf(id); len(by) != 2 {
			notAgain = append(notAgain, id)
		}
	}
	if len(notAgain) > 0 {
		sort.Strings(notAgain)
		t.Errorf("%d deliveries node-2 pushed without recording were not pushed exactly once more, e.g. %v", len(notAgain), head(notAgain, 5))
	}
	if lag > threeMaxCommitLag {
		t.Errorf("node-2 died with a push answered %s earlier still unrecorded; want outcomes committed within %s", lag, threeMaxCommitLag)
	}
}

// checkSenders checks who sent what, from the connections' owners (skipped,
// with a note, when some push could not be attributed): a duplicate comes
// from node 2 first, then a survivor; no node had more than threeConcurrency
// pushes open at once; each survivor's delivered counter equals the pushes
// the receiver answered it.
func (f *threeNodes) checkSenders(st trackerStats) {
	t := f.t
	if st.ByNode["?"] > 0 || st.ByNode[""] > 0 {
		t.Logf("%d pushes could not be attributed to a node; the per-node checks are skipped", st.ByNode["?"]+st.ByNode[""])
		return
	}
	for _, id := range st.Duplicated {
		if by := f.tr.sendersOf(id); len(by) != 2 || by[0] != "node-2" || by[1] == "node-2" {
			t.Errorf("delivery %s was pushed by %v; a duplicate must come from node-2 first, then a survivor", id, by)
		}
	}
	for name, n := range st.MaxOpenByNode {
		if n > threeConcurrency {
			t.Errorf("%s had %d pushes open at once; want at most --endpoint-max-concurrency %d", name, n, threeConcurrency)
		}
	}
	// The counter goes up after the outcome's commit, so it may lag the
	// store (where nothing is pending any more): wait for it to catch up
	// with what the receiver answered, then require it equal.
	for _, h := range f.survivors {
		want := st.ByNode[h.name]
		v := waitMetric(t, h, deliveredSeries, float64(want))
		if int(v) != want {
			t.Errorf("%s: %s is %.0f but the receiver answered %d of its pushes", h.name, deliveredSeries, v, want)
		}
	}
}

// TestThreeNodesSurviveOneSIGKILL runs three nodes on one database,
// publishes 10,000 events across them, SIGKILLs node 2 while publishing and
// delivering go on, and requires every event to arrive at least once: node
// 2's deliveries are taken over by the survivors when its leases expire
// (no accepted delivery vanishes, and after a crash every one not known to
// be finished is attempted again). The duplicates are counted and
// must be exactly the deliveries node 2 had in flight: pushed, outcome not
// yet recorded.
func TestThreeNodesSurviveOneSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	f := startThreeNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer f.pub.wg.Wait()
	defer cancel() // runs first: stops the publishers if the test ends early
	f.startPublishers(ctx)

	killStart := f.killNode2()
	unrecorded, lag := f.readNode2Held(killStart)
	f.waitPublishers()
	f.checkEveryEventArrived(killStart)
	st := f.checkReceipts(unrecorded)
	f.checkDuplicates(st, unrecorded, lag)
	f.checkSenders(st)
}

// publishRoundRobin publishes ids in batches of batch events, batch b
// through nodes[b%len(nodes)], from publishers goroutines at once, and
// returns the errors of the publishes that failed (a publisher stops at its
// first).
func publishRoundRobin(ctx context.Context, nodes []*herald, ids []string, batch, publishers int) []error {
	batches := make(chan int, len(ids)/batch)
	for b := range len(ids) / batch {
		batches <- b
	}
	close(batches)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				h := nodes[b%len(nodes)]
				if err := h.publish(ctx, ids[b*batch:(b+1)*batch]); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("batch %d to %s: %w", b, h.name, err))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// checkDeliveredCounters compares the nodes' delivered counters with what
// the receiver answered them (st): each node delivered some, each node's
// counter equals the pushes the receiver answered it (when every push was
// attributed), no node had more than concurrency pushes open at once, and
// the counters add up to total. The counters go up after each outcome's
// commit, so they may lag the store (where nothing is pending any more):
// it first waits until every node's has caught up with what the receiver
// answered it (or, pushes not attributed, until they add up to total).
func checkDeliveredCounters(t *testing.T, nodes []*herald, st trackerStats, total, concurrency int) {
	t.Helper()
	if st.ByNode["?"] == 0 {
		for _, h := range nodes {
			waitMetric(t, h, deliveredSeries, float64(st.ByNode[h.name]))
		}
	} else {
		waitFor(t, 10*time.Second, "the nodes' "+deliveredSeries+" to add up to the deliveries", func() (bool, string) {
			sum := 0.0
			for _, h := range nodes {
				v, err := h.metricNow(deliveredSeries)
				if err != nil {
					return false, err.Error()
				}
				sum += v
			}
			return sum >= float64(total), fmt.Sprintf("%.0f in all, want %d", sum, total)
		})
	}
	sum := 0.0
	for _, h := range nodes {
		v, err := h.metricNow(deliveredSeries)
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		sum += v
		if v == 0 {
			t.Errorf("%s delivered nothing: the test did not make the nodes share the work", h.name)
		}
		if n := st.ByNode[h.name]; st.ByNode["?"] == 0 && int(v) != n {
			t.Errorf("%s: %s is %.0f but the receiver answered %d of its pushes", h.name, deliveredSeries, v, n)
		}
		if n := st.MaxOpenByNode[h.name]; n > concurrency {
			t.Errorf("%s had %d pushes open at once; want at most --endpoint-max-concurrency %d", h.name, n, concurrency)
		}
	}
	if int(sum) != total {
		t.Errorf("the nodes recorded %.0f deliveries as delivered in all, want %d", sum, total)
	}
}

// TestTwoNodesNeverAttemptTheSameDeliveryAtOnce publishes 2,000 events to
// two nodes on one database and requires that no delivery is ever pushed by
// both at once, nor twice at all while both are alive (a lease gives each
// due delivery to one node).
func TestTwoNodesNeverAttemptTheSameDeliveryAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const (
		total       = 2_000
		batch       = 100
		publishers  = 4
		concurrency = 32
	)
	dbURL := pgtest.SchemaURL(t)
	from := newSenders()
	tr := newPushTracker(from)
	// Each push is held 20 ms: two nodes attempting the same delivery would
	// have it open at the receiver at the same time.
	rcv := newWrappedReceiver(t, 20*time.Millisecond, false, tr.wrap)
	// --window 100 leaves most fresh deliveries to the due loaders, so the
	// two nodes claim from the same rows of the store.
	flags := []string{"--endpoint-max-concurrency", strconv.Itoa(concurrency), "--window", "100"}
	n1 := startNode(t, "node-1", dbURL, flags...)
	subID := n1.createSubscription(t, "multinode-exclusive", rcv.URL())
	n2 := startNode(t, "node-2", dbURL, flags...)
	nodes := []*herald{n1, n2}
	for _, h := range nodes {
		from.add(h)
	}

	ids := make([]string, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("ex-%05d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	for _, err := range publishRoundRobin(ctx, nodes, ids, batch, publishers) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("published %d events to 2 nodes in %s", total, time.Since(began).Round(time.Millisecond))

	waitFor(t, 60*time.Second, "every event to arrive", func() (bool, string) {
		m := rcv.missing(ids)
		return len(m) == 0, fmt.Sprintf("%d of %d events never arrived, e.g. %v", len(m), total, head(m, 5))
	})
	t.Logf("all %d events arrived %s after the first publish", total, time.Since(began).Round(time.Millisecond))
	checkSettled(t, n1, subID, rcv, ids)

	st, rs := tr.stats(), rcv.stats()
	t.Logf("receiver: %d pushes arrived, %d answered 200 for %d distinct deliveries; most open at once for one delivery: %d; by herald-delivery-attempt %v; by node %v; most open at once by node %v",
		rs.Requests, st.Receipts, st.Distinct, st.MaxOpen, st.ByAttempt, st.ByNode, st.MaxOpenByNode)
	if st.MaxOpen != 1 {
		t.Errorf("delivery %s was pushed %d times at once; want 1", st.MaxOpenID, st.MaxOpen)
	}
	if st.Receipts != st.Distinct || st.Distinct != total || rs.Requests != total {
		t.Errorf("%d pushes arrived and %d were answered for %d distinct deliveries (duplicated e.g. %v); want %d of each: no duplicate while both nodes are alive",
			rs.Requests, st.Receipts, st.Distinct, head(st.Duplicated, 5), total)
	}
	checkDeliveredCounters(t, nodes, st, total, concurrency)
}

// TestDedupAcrossNodes publishes each of 50 events to two nodes at the same
// moment, twice to each, and requires exactly one of the four answers to
// say it is new and exactly one delivery per event: the (source, id) dedup
// holds across nodes, not just within one.
func TestDedupAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	const (
		rounds  = 50
		perNode = 2 // concurrent publishes of each event to each node
	)
	dbURL := pgtest.SchemaURL(t)
	tr := newPushTracker(nil)
	rcv := newWrappedReceiver(t, 0, false, tr.wrap)
	n1 := startNode(t, "node-1", dbURL)
	subID := n1.createSubscription(t, "multinode-dedup", rcv.URL())
	n2 := startNode(t, "node-2", dbURL)
	nodes := []*herald{n1, n2}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		node       string
		duplicate  bool
		deliveries int
		err        error
	}
	ids := make([]string, rounds)
	wonBy := map[string]int{}
	for r := range rounds {
		id := fmt.Sprintf("dedup-%02d", r)
		ids[r] = id
		answers := make([]answer, 2*perNode)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range answers {
			h := nodes[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				a := answer{node: h.name}
				res, err := h.publishRaw(ctx, []string{id})
				if err == nil && res.Events[0].ID != id {
					err = fmt.Errorf("answer is for %s", res.Events[0].ID)
				}
				if err == nil {
					a.duplicate, a.deliveries = res.Events[0].Duplicate, res.Events[0].Deliveries
				}
				a.err = err
				answers[i] = a
			}()
		}
		close(start)
		wg.Wait()
		fresh := 0
		for _, a := range answers {
			switch {
			case a.err != nil:
				t.Fatalf("publishing %s to %s: %v", id, a.node, a.err)
			case !a.duplicate:
				fresh++
				wonBy[a.node]++
				if a.deliveries != 1 {
					t.Errorf("%s: the new %s has %d deliveries, want 1", a.node, id, a.deliveries)
				}
			case a.deliveries != 0:
				t.Errorf("%s: the duplicate %s has %d deliveries, want 0", a.node, id, a.deliveries)
			}
		}
		if fresh != 1 {
			t.Errorf("%s published %d times at once to 2 nodes: %d answers say duplicate:false, want exactly 1 (%+v)", id, len(answers), fresh, answers)
		}
	}
	t.Logf("%d events, each published %d times at once to each of 2 nodes; accepted as new by: %v", rounds, perNode, wonBy)

	waitFor(t, 30*time.Second, "every event to arrive", func() (bool, string) {
		m := rcv.missing(ids)
		return len(m) == 0, fmt.Sprintf("%d of %d events never arrived, e.g. %v", len(m), rounds, head(m, 5))
	})
	checkSettled(t, n1, subID, rcv, ids)
	st := tr.stats()
	if st.Receipts != rounds || st.Distinct != rounds {
		t.Errorf("%d pushes answered for %d distinct deliveries, want %d of each: exactly one delivery per event", st.Receipts, st.Distinct, rounds)
	}
}
