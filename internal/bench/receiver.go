package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Receiver behaviours.
const (
	modeOK        int32 = iota // answer 200
	modeFail                   // answer 503 (not counted as a receipt)
	modeFailFirst              // answer 500 to first attempts (counted), 200 to retries
)

// track counts one receiver's receipts of one phase's events: event N,
// N in [0, n), has the id appendEventID makes of it with prefix and uuids.
// Each id is counted once; repeats are duplicates (allowed by at-least-once
// delivery, but worth reporting).
type track struct {
	prefix string
	uuids  bool
	n      int      // events in the phase
	seen   []uint64 // bit N: event N arrived
	lat    *recorder
	// With split set, events sent after split (UnixNano, 0: not yet) go to
	// latAfter instead of lat, and lastBefore is the last receipt of an
	// event sent before it.
	split      *atomic.Int64
	latAfter   *recorder
	lastBefore atomic.Int64
	unique     atomic.Int64
	dups       atomic.Int64
	first      atomic.Int64 // UnixNano of the first receipt
	last       atomic.Int64 // UnixNano of the last receipt
}

func newTrack(prefix string, uuids bool, n int, lat *recorder) *track {
	return &track{prefix: prefix, uuids: uuids, n: n, seen: make([]uint64, (n+63)/64), lat: lat}
}

// mark counts event n received at now (UnixNano), sent at sent (UnixNano,
// 0 if unknown), after recording its receipt time and latency. It reports
// false for an id out of range.
func (t *track) mark(n int, now, sent int64) bool {
	if n < 0 || n >= t.n {
		return false
	}
	bit := uint64(1) << (n % 64)
	if atomic.OrUint64(&t.seen[n/64], bit)&bit != 0 {
		t.dups.Add(1)
		return true
	}
	t.first.CompareAndSwap(0, now)
	for {
		l := t.last.Load()
		if now <= l || t.last.CompareAndSwap(l, now) {
			break
		}
	}
	lat := t.lat
	if t.split != nil {
		if at := t.split.Load(); at != 0 && sent > at {
			lat = t.latAfter
		} else {
			for {
				l := t.lastBefore.Load()
				if now <= l || t.lastBefore.CompareAndSwap(l, now) {
					break
				}
			}
		}
	}
	if sent > 0 && lat != nil {
		lat.add(time.Duration(now - sent))
	}
	// Counted last: a phase ends when every event is counted, and reads
	// the latencies and receipt times then, which must all be in.
	t.unique.Add(1)
	return true
}

// Receiver is one webhook endpoint: an HTTP server on loopback (or, for a
// black hole, a listener that accepts connections and never answers).
type Receiver struct {
	URL       string
	blackhole bool

	mode atomic.Int32
	cur  atomic.Pointer[track]

	requests atomic.Int64 // every request (or, for a black hole, connection)
	events   atomic.Int64 // events in the requests recorded (a batch counts each)
	batches  atomic.Int64 // requests sent as application/cloudevents-batch+json
	failed   atomic.Int64 // answered with an error status
	retried  atomic.Int64 // later attempts answered 200 in modeFailFirst
	stale    atomic.Int64 // events of no current phase

	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	conn map[net.Conn]struct{} // a black hole's held connections
	done chan struct{}
	wg   sync.WaitGroup
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// startReceiver listens on 127.0.0.1:0 and serves until close.
func startReceiver(path string, blackhole bool) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + path, blackhole: blackhole, ln: ln, done: make(chan struct{})}
	if blackhole {
		r.conn = map[net.Conn]struct{}{}
		r.wg.Add(1)
		go r.holdAll()
		return r, nil
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// holdAll accepts connections, reads and discards what arrives, and never
// writes: a peer that never answers.
func (r *Receiver) holdAll() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.requests.Add(1)
		r.mu.Lock()
		select {
		case <-r.done:
			r.mu.Unlock()
			c.Close()
			return
		default:
		}
		r.conn[c] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			_, _ = io.Copy(io.Discard, c) // until either side closes
			r.mu.Lock()
			delete(r.conn, c)
			r.mu.Unlock()
			c.Close()
		}()
	}
}

// ServeHTTP answers one delivery attempt.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(req.Body, 4<<20))
	now := time.Now().UnixNano()
	r.requests.Add(1)
	defer bodyPool.Put(buf)
	if err != nil {
		r.failed.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if isBatchType(req.Header.Get("Content-Type")) {
		r.batches.Add(1)
	}
	switch r.mode.Load() {
	case modeFail:
		r.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case modeFailFirst:
		if req.Header.Get("Herald-Delivery-Attempt") != "1" {
			r.retried.Add(1)
			w.WriteHeader(http.StatusOK)
			return
		}
		r.record(buf.Bytes(), now)
		r.failed.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.record(buf.Bytes(), now)
	w.WriteHeader(http.StatusOK)
}

// record counts the events of a request's body received at now: one
// structured-mode CloudEvent, or a batch (a JSON array of them), each
// event with its own id and benchsent.
func (r *Receiver) record(body []byte, now int64) {
	if !eachElement(body, func(ev []byte) { r.recordOne(ev, now) }) {
		r.recordOne(body, now)
	}
}

func (r *Receiver) recordOne(body []byte, now int64) {
	r.events.Add(1)
	id, sent := parseDelivered(body)
	t := r.cur.Load()
	if t == nil {
		r.stale.Add(1)
		return
	}
	n, ok := eventNumber(id, t.prefix, t.uuids)
	if !ok || !t.mark(n, now, sent) {
		r.stale.Add(1)
	}
}

// setTrack makes t the phase whose events are counted.
func (r *Receiver) setTrack(t *track) { r.cur.Store(t) }

// close stops the receiver, closing connections it holds.
func (r *Receiver) close() {
	select {
	case <-r.done:
		return
	default:
	}
	r.mu.Lock()
	close(r.done)
	for c := range r.conn {
		c.Close()
	}
	r.mu.Unlock()
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = r.srv.Shutdown(ctx)
		cancel()
		_ = r.srv.Close()
	} else {
		r.ln.Close()
	}
	r.wg.Wait()
}

var (
	idKey   = []byte(`"id":"`)
	sentKey = []byte(`"benchsent":"`)
)

// parseDelivered finds the event id and the benchsent attribute in a
// delivered CloudEvent (structured mode, as Herald writes it: attributes
// before data, compact). It scans instead of decoding so that receivers cost
// the machine little; the bench's own events carry no such keys in data.
func parseDelivered(body []byte) (id []byte, sent int64) {
	id = stringAfter(body, idKey)
	if s := stringAfter(body, sentKey); s != nil {
		sent, _ = strconv.ParseInt(string(s), 10, 64)
	}
	return id, sent
}

// batchType is the media type of a CloudEvents batch (JSON format).
const batchType = "application/cloudevents-batch+json"

// isBatchType reports whether a Content-Type value names a CloudEvents
// batch, parameters aside.
func isBatchType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), batchType)
}

// eachElement calls f with each element of b when b is a JSON array (as a
// batch body is), found by following strings and nesting instead of
// decoding, and reports whether b was one. It does not validate: a
// malformed element is passed on as it is (and, having no id, counted as
// stale); an array not closed still gives the elements that ended.
func eachElement(b []byte, f func(elem []byte)) bool {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) || b[i] != '[' {
		return false
	}
	start, depth, inStr, esc := -1, 0, false, false
	for i++; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if isSpace(c) {
			continue
		}
		if start < 0 && c != ',' && !(depth == 0 && c == ']') {
			start = i
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}':
			depth--
		case ']':
			if depth > 0 {
				depth--
				continue
			}
			if start >= 0 {
				f(bytes.TrimRight(b[start:i], " \t\r\n"))
			}
			return true
		case ',':
			if depth == 0 {
				if start >= 0 {
					f(bytes.TrimRight(b[start:i], " \t\r\n"))
				}
				start = -1
			}
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringAfter returns the JSON string (without escapes, as the bench writes
// them) that follows key in b, or nil.
func stringAfter(b, key []byte) []byte {
	i := bytes.Index(b, key)
	if i < 0 {
		return nil
	}
	b = b[i+len(key):]
	j := bytes.IndexByte(b, '"')
	if j < 0 {
		return nil
	}
	return b[:j]
}
