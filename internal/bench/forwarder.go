package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/profiling"
)

// The baseline forwarder is what `herald bench --baseline` compares Herald
// with: a webhook forwarder that does exactly what the issue says and
// nothing cleverer — decode each publish with encoding/json into maps, match
// each event's type against a map of routes, re-encode the event with
// encoding/json and POST it to each subscribed URL from a pool of 16
// goroutines fed by a bounded channel. No store, no retries (a failed POST
// is counted and dropped), no checks beyond decoding the JSON, no signing,
// no batching.
//
// It runs as a child process of the bench's own binary, `herald-bench
// forwarder` (a hidden command), started and killed by the bench exactly as
// `herald serve` is, so that its CPU time and memory are read from /proc the same
// way. It cannot run inside the bench process: that process also runs the
// load generator and the receivers, whose CPU could not be told apart from
// the forwarder's. "In-process" in the issue is read as "built into the
// bench's binary, its server and its client in one process, no outside
// program". The bench feeds it routes through the same request it makes to
// Herald, POST /v1/subscriptions (only name, url and event_types; anything
// else is refused, so a scenario that needs more of Herald cannot be
// compared by mistake), and publishes to POST /v1/events as it does to
// Herald, with the same bodies; the Authorization header is ignored.

// ForwarderCommand is the hidden command of the bench's binary
// (herald-bench) that runs the forwarder: Config.Forwarder's default is
// that binary with it.
const ForwarderCommand = "forwarder"

// forwarderAnnounce begins the line the forwarder prints on stdout once it
// listens, followed by http://ADDR.
const forwarderAnnounce = "herald-bench forwarder listening on "

// ForwarderOptions configure the baseline forwarder.
type ForwarderOptions struct {
	Listen  string        // address to listen on
	Workers int           // goroutines POSTing (the 16)
	Queue   int           // capacity of the channel feeding them
	Timeout time.Duration // of each POST
	// Pprof, when set, is an address (HOST:PORT) to serve Go's profiles on
	// (internal/profiling), as herald serve's --pprof does.
	Pprof string
}

// DefaultForwarderOptions are the forwarder's defaults: 16 workers.
func DefaultForwarderOptions() ForwarderOptions {
	return ForwarderOptions{Listen: "127.0.0.1:0", Workers: 16, Queue: 1024, Timeout: 30 * time.Second}
}

// ForwarderFlags defines the forwarder's flags on fs and returns the
// options they set.
func ForwarderFlags(fs *flag.FlagSet) *ForwarderOptions {
	o := DefaultForwarderOptions()
	fs.StringVar(&o.Listen, "listen", o.Listen, "address to listen on (HOST:PORT; port 0 picks one); the address is printed on stdout")
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines POSTing events (1 to 1024)")
	fs.IntVar(&o.Queue, "queue", o.Queue, "capacity of the channel feeding the workers (1 to 1000000)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "timeout of each POST (100ms to 5m)")
	fs.StringVar(&o.Pprof, "pprof", "", "serve Go's profiles on this `ADDR` (HOST:PORT), as herald serve --pprof does")
	return &o
}

// Check reports the first bad option.
func (o ForwarderOptions) Check() error {
	if _, port, err := net.SplitHostPort(o.Listen); err != nil || port == "" {
		return fmt.Errorf("--listen %q: want HOST:PORT", o.Listen)
	}
	if o.Workers < 1 || o.Workers > 1024 {
		return fmt.Errorf("--workers %d: must be from 1 to 1024", o.Workers)
	}
	if o.Queue < 1 || o.Queue > 1_000_000 {
		return fmt.Errorf("--queue %d: must be from 1 to 1000000", o.Queue)
	}
	if o.Timeout < 100*time.Millisecond || o.Timeout > 5*time.Minute {
		return fmt.Errorf("--timeout %v: must be from 100ms to 5m", o.Timeout)
	}
	return nil
}

// RunForwarder listens on o.Listen, prints forwarderAnnounce and the URL to
// out, and forwards until ctx ends.
func RunForwarder(ctx context.Context, o ForwarderOptions, out io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	if o.Pprof != "" {
		pln, err := net.Listen("tcp", o.Pprof)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("--pprof: %w", err)
		}
		defer pln.Close()
		go func() { _ = profiling.Serve(pln, 2*time.Minute) }()
	}
	f := NewForwarder(o)
	defer f.Close()
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(out, "%shttp://%s\n", forwarderAnnounce, ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// Forwarder is the baseline forwarder's HTTP handler and its workers.
type Forwarder struct {
	jobs   chan forwardJob
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.RWMutex
	routes map[string][]string // event type → endpoint URLs
	nroute int

	closeOnce sync.Once

	accepted atomic.Int64 // events decoded from publish requests
	queued   atomic.Int64 // POSTs put on the channel
	sent     atomic.Int64 // POSTs answered 2xx
	failed   atomic.Int64 // POSTs that failed or were answered otherwise (dropped)
}

type forwardJob struct {
	url  string
	body []byte // the event, re-encoded
}

// ForwarderStats are the forwarder's counters (GET /forwarder/stats).
type ForwarderStats struct {
	Routes   int   `json:"routes"`
	Accepted int64 `json:"accepted"`
	Queued   int64 `json:"queued"`
	Sent     int64 `json:"sent"`
	Failed   int64 `json:"failed"`
}

// NewForwarder starts o.Workers workers; Close stops them.
func NewForwarder(o ForwarderOptions) *Forwarder {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit across hosts
		MaxIdleConnsPerHost: o.Workers,
		IdleConnTimeout:     time.Minute,
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forwarder{
		jobs:   make(chan forwardJob, o.Queue),
		client: &http.Client{Transport: tr, Timeout: o.Timeout},
		ctx:    ctx, cancel: cancel,
		routes: map[string][]string{},
	}
	for range o.Workers {
		f.wg.Add(1)
		go f.work()
	}
	return f
}

// Close stops the workers (what is still queued is dropped).
func (f *Forwarder) Close() {
	f.closeOnce.Do(func() {
		f.cancel()
		f.wg.Wait()
		f.client.CloseIdleConnections()
	})
}

// Stats returns the counters.
func (f *Forwarder) Stats() ForwarderStats {
	f.mu.RLock()
	n := f.nroute
	f.mu.RUnlock()
	return ForwarderStats{Routes: n, Accepted: f.accepted.Load(), Queued: f.queued.Load(), Sent: f.sent.Load(), Failed: f.failed.Load()}
}

func (f *Forwarder) work() {
	defer f.wg.Done()
	for {
		var j forwardJob
		select {
		case j = <-f.jobs:
		case <-f.ctx.Done():
			return
		}
		req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, j.url, bytes.NewReader(j.body))
		if err != nil {
			f.failed.Add(1)
			continue
		}
		req.Header.Set("Content-Type", "application/cloudevents+json")
		resp, err := f.client.Do(req)
		if err != nil {
			f.failed.Add(1)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			f.failed.Add(1)
			continue
		}
		f.sent.Add(1)
	}
}

// ServeHTTP routes the forwarder's few requests.
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/events":
		f.publish(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/subscriptions":
		f.addRoute(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/readyz":
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet && r.URL.Path == "/forwarder/stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f.Stats())
	default:
		http.Error(w, "the baseline forwarder has no "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

// publish decodes a structured-mode CloudEvent or a batch of them into
// maps, puts one POST per (event, subscribed URL) on the channel (waiting
// while it is full), and answers 202 with each event's deliveries, the
// part of Herald's answer the bench reads.
func (f *Forwarder) publish(w http.ResponseWriter, r *http.Request) {
	var events []map[string]any
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20))
	var err error
	if isBatchType(r.Header.Get("Content-Type")) {
		err = dec.Decode(&events)
	} else {
		var ev map[string]any
		err = dec.Decode(&ev)
		events = []map[string]any{ev}
	}
	if err != nil {
		http.Error(w, "decoding the events: "+err.Error(), http.StatusBadRequest)
		return
	}
	type answer struct {
		Deliveries int `json:"deliveries"`
	}
	out := struct {
		Events []answer `json:"events"`
	}{Events: make([]answer, len(events))}
	for i, ev := range events {
		f.accepted.Add(1)
		t, _ := ev["type"].(string)
		f.mu.RLock()
		urls := f.routes[t]
		f.mu.RUnlock()
		if len(urls) == 0 {
			continue
		}
		body, err := json.Marshal(ev)
		if err != nil {
			http.Error(w, "encoding an event: "+err.Error(), http.StatusBadRequest)
			return
		}
		for _, u := range urls {
			select {
			case f.jobs <- forwardJob{url: u, body: body}:
				f.queued.Add(1)
				out.Events[i].Deliveries++
			case <-r.Context().Done():
				return
			case <-f.ctx.Done():
				http.Error(w, "closing", http.StatusServiceUnavailable)
				return
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(out)
}

// route is what the forwarder takes of a subscription.
type route struct {
	Name       string   `json:"name"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
}

// addRoute takes a subscription in the shape the bench creates on Herald
// (name, url, event_types; any other member is refused: the forwarder has
// no retry policies, filters, batches or pull delivery) and routes its
// event types to its URL.
func (f *Forwarder) addRoute(w http.ResponseWriter, r *http.Request) {
	var rt route
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rt); err != nil {
		http.Error(w, "the baseline forwarder takes a subscription's name, url and event_types only: "+err.Error(), http.StatusBadRequest)
		return
	}
	if rt.URL == "" || len(rt.EventTypes) == 0 {
		http.Error(w, "the baseline forwarder needs a url and event_types", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	for _, t := range rt.EventTypes {
		f.routes[t] = append(f.routes[t], rt.URL)
	}
	f.nroute++
	id := "route_" + strconv.Itoa(f.nroute)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "name": rt.Name})
}

// forwarderStats reads the forwarder's counters through the API client.
func (c *client) forwarderStats(ctx context.Context) (ForwarderStats, error) {
	var st ForwarderStats
	code, resp, err := c.do(ctx, http.MethodGet, "/forwarder/stats", "", nil)
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("/forwarder/stats answered %d", code)
	}
	if err := json.Unmarshal(resp, &st); err != nil {
		return st, fmt.Errorf("/forwarder/stats: %v", err)
	}
	return st, nil
}

// errForwarderDropped: the forwarder does not retry, so a failed POST means
// the scenario's receipts can never all arrive.
var errForwarderDropped = errors.New("the baseline forwarder dropped events (it does not retry)")
