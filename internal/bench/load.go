package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// publishTries is how many times one publish request is sent before the
// load fails: a 5xx, a 429 or a transport error is tried again after a short
// pause (the (source, id) of each event makes a repeat harmless: the server
// answers it as a duplicate).
const publishTries = 4

// eventSource is the CloudEvents source of every event the bench publishes.
const eventSource = "/herald-bench"

// load is one stream of publishes: events prefix+0 … prefix+(events−1), in
// requests of batch events, from publishers concurrent clients, either as
// fast as they go (rate 0) or at rate events per second offered.
type load struct {
	prefix     string
	events     int
	batch      int
	publishers int
	rate       float64
	typeOf     func(n int) string
	keyOf      func(n int) string // event n's partitionkey; nil: none
	data       []byte             // the "data" member of each event, JSON
	uuids      bool               // ids are random UUIDs (ids.go); set by env.run
	// via, when set, sends each request's body instead of POST /v1/events
	// (the source scenario's JetStream publish; the server's answer, and
	// so the deliveries and duplicates it counts, are then unknown).
	via func(ctx context.Context, body []byte) error

	accepted atomic.Int64 // events answered 202 so far, for progress
}

// loadResult is what a load did.
type loadResult struct {
	Accepted   int64 `json:"accepted"`
	Deliveries int64 `json:"deliveries"` // as the server answered
	Duplicates int64 `json:"duplicates"`
	Requests   int64 `json:"requests"`
	Retries    int64 `json:"retries"`
	start, end time.Time
	// Late is, under an offered rate, how far behind its schedule the last
	// request was sent (the publishers could not keep up).
	Late time.Duration `json:"-"`
}

func (r loadResult) seconds() float64 { return r.end.Sub(r.start).Seconds() }

// run publishes the load and returns when every request has been answered
// (or one failed for good, or ctx ended).
func (l *load) run(ctx context.Context, c *client) (loadResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &loadRun{l: l, cancel: cancel, nreq: (l.events + l.batch - 1) / l.batch}
	jobs := make(chan loadJob, 2*l.publishers)
	r.start = time.Now()
	if l.rate > 0 {
		go r.pace(ctx, jobs)
	} else {
		go r.feed(ctx, jobs)
	}
	var wg sync.WaitGroup
	for range l.publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.publish(ctx, c, jobs)
		}()
	}
	wg.Wait()
	return r.result(ctx)
}

// loadJob is one publish request of a load: the k-th, and under an offered
// rate the time it is scheduled for (zero: now).
type loadJob struct {
	k  int
	at time.Time
}

// loadRun is one run of a load: the counters its publishers share and the
// first error, which cancels the run.
type loadRun struct {
	l      *load
	cancel context.CancelFunc
	nreq   int       // requests in the load
	start  time.Time // when the run began; request k is scheduled from it

	mu       sync.Mutex
	firstErr error

	requests, retries, dels, dups atomic.Int64
	lastNano                      atomic.Int64 // when the last answer came, Unix ns
	late                          atomic.Int64 // a time.Duration: see loadResult.Late
}

// fail records err if it is the first, and cancels the run.
func (r *loadRun) fail(err error) {
	r.mu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
	r.cancel()
}

// pace sends the load's requests to jobs at its offered rate, request k at
// start + k × the interval, and records how late the last one went; it
// closes jobs at the end or when ctx ends.
func (r *loadRun) pace(ctx context.Context, jobs chan<- loadJob) {
	defer close(jobs)
	interval := time.Duration(float64(time.Second) * float64(r.l.batch) / r.l.rate)
	for k := 0; k < r.nreq; k++ {
		at := r.start.Add(time.Duration(k) * interval)
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		select {
		case jobs <- loadJob{k, at}:
		case <-ctx.Done():
			return
		}
		if k == r.nreq-1 {
			r.late.Store(int64(time.Since(at)))
		}
	}
}

// feed sends the load's requests to jobs as fast as the publishers take
// them; it closes jobs at the end or when ctx ends.
func (r *loadRun) feed(ctx context.Context, jobs chan<- loadJob) {
	defer close(jobs)
	for k := 0; k < r.nreq; k++ {
		select {
		case jobs <- loadJob{k: k}:
		case <-ctx.Done():
			return
		}
	}
}

// publish is one publisher: it sends the requests of jobs one after the
// other, each event stamped with its request's scheduled time (or the time
// it is sent), and counts what the server answered. It returns when jobs
// is closed or a request failed for good.
func (r *loadRun) publish(ctx context.Context, c *client, jobs <-chan loadJob) {
	l := r.l
	ctype := "application/cloudevents+json"
	if l.batch > 1 {
		ctype = "application/cloudevents-batch+json"
	}
	var buf []byte
	for j := range jobs {
		lo := j.k * l.batch
		hi := min(lo+l.batch, l.events)
		sent := j.at
		if sent.IsZero() {
			sent = time.Now()
		}
		buf = l.body(buf[:0], lo, hi, sent.UnixNano())
		d, u, tries, err := r.send(ctx, c, ctype, buf)
		r.requests.Add(int64(tries))
		r.retries.Add(int64(tries - 1))
		if err != nil {
			if ctx.Err() == nil {
				r.fail(fmt.Errorf("publishing events %d–%d: %w", lo, hi-1, err))
			}
			return
		}
		r.dels.Add(d)
		r.dups.Add(u)
		l.accepted.Add(int64(hi - lo))
		now := time.Now().UnixNano()
		for {
			v := r.lastNano.Load()
			if now <= v || r.lastNano.CompareAndSwap(v, now) {
				break
			}
		}
	}
}

// result is what the run did, once its publishers have returned, and its
// error: the first failure, else ctx's, else a shortfall of accepted events.
func (r *loadRun) result(ctx context.Context) (loadResult, error) {
	l := r.l
	res := loadResult{start: r.start}
	res.Accepted = l.accepted.Load()
	res.Deliveries, res.Duplicates = r.dels.Load(), r.dups.Load()
	res.Requests, res.Retries = r.requests.Load(), r.retries.Load()
	res.end = time.Unix(0, r.lastNano.Load())
	if r.lastNano.Load() == 0 {
		res.end = time.Now()
	}
	res.Late = time.Duration(r.late.Load())
	firstErr := r.firstErr
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr == nil && res.Accepted != int64(l.events) {
		firstErr = fmt.Errorf("published %d of %d events", res.Accepted, l.events)
	}
	return res, firstErr
}

// send sends one request's body: through the load's via, else with
// publishOnce.
func (r *loadRun) send(ctx context.Context, c *client, ctype string, body []byte) (dels, dups int64, tries int, err error) {
	if r.l.via == nil {
		return publishOnce(ctx, c, ctype, body)
	}
	return 0, 0, 1, r.l.via(ctx, body)
}

// publishOnce sends one publish request, trying again on a transient error.
// It returns the deliveries and duplicates the server reported and how many
// times the request was sent.
func publishOnce(ctx context.Context, c *client, ctype string, body []byte) (dels, dups int64, tries int, err error) {
	pause := 100 * time.Millisecond
	for tries = 1; ; tries++ {
		var code int
		var resp []byte
		code, resp, err = c.do(ctx, http.MethodPost, "/v1/events", ctype, body)
		if err == nil && code == http.StatusAccepted {
			var out struct {
				Events []struct {
					Duplicate  bool `json:"duplicate"`
					Deliveries int  `json:"deliveries"`
				} `json:"events"`
			}
			if err := json.Unmarshal(resp, &out); err != nil {
				return 0, 0, tries, fmt.Errorf("publish answer: %v", err)
			}
			for _, e := range out.Events {
				dels += int64(e.Deliveries)
				if e.Duplicate {
					dups++
				}
			}
			return dels, dups, tries, nil
		}
		if err == nil {
			err = fmt.Errorf("publish answered %d: %.300s", code, resp)
			if code < 500 && code != http.StatusTooManyRequests {
				return 0, 0, tries, err // the bench's mistake: no point repeating
			}
		}
		if tries >= publishTries || ctx.Err() != nil {
			return 0, 0, tries, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, 0, tries, errors.Join(err, ctx.Err())
		}
		pause *= 2
	}
}

// body appends the events lo … hi−1 to b: one structured-mode event when
// batch is 1, else a JSON array (batch mode).
func (l *load) body(b []byte, lo, hi int, sent int64) []byte {
	if l.batch > 1 {
		b = append(b, '[')
	}
	for n := lo; n < hi; n++ {
		if n > lo {
			b = append(b, ',')
		}
		b = append(b, `{"specversion":"1.0","id":"`...)
		b = appendEventID(b, l.prefix, n, l.uuids)
		b = append(b, `","source":"`+eventSource+`","type":"`...)
		b = append(b, l.typeOf(n)...)
		if l.keyOf != nil {
			b = append(b, `","partitionkey":"`...)
			b = append(b, l.keyOf(n)...)
		}
		b = append(b, `","benchsent":"`...)
		b = strconv.AppendInt(b, sent, 10)
		b = append(b, `","datacontenttype":"application/json","data":`...)
		b = append(b, l.data...)
		b = append(b, '}')
	}
	if l.batch > 1 {
		b = append(b, ']')
	}
	return b
}

// eventData returns a JSON object of about size bytes to carry as data.
func eventData(size int) []byte { return padded(`{"bench":true,"pad":"`, size) }

// padded returns head (a JSON object up to the opening quote of its last
// member's string value) with letters and the closing `"}` after it, size
// bytes in all (or just head closed, when head is that long already).
func padded(head string, size int) []byte {
	pad := max(size-len(head)-2, 0)
	b := make([]byte, 0, len(head)+pad+2)
	b = append(b, head...)
	for i := range pad {
		b = append(b, 'a'+byte(i%26))
	}
	return append(b, `"}`...)
}
