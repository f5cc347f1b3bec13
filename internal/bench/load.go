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
	data       []byte // the "data" member of each event, JSON
	uuids      bool   // ids are random UUIDs (ids.go); set by env.run

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
	var (
		res      loadResult
		mu       sync.Mutex
		firstErr error
		nreq     = (l.events + l.batch - 1) / l.batch
		next     atomic.Int64
		wg       sync.WaitGroup
		requests atomic.Int64
		retries  atomic.Int64
		dels     atomic.Int64
		dups     atomic.Int64
		lastNano atomic.Int64
		late     atomic.Int64
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	type job struct {
		k  int
		at time.Time // scheduled time (offered rate); zero: now
	}
	jobs := make(chan job, 2*l.publishers)
	res.start = time.Now()
	if l.rate > 0 {
		interval := time.Duration(float64(time.Second) * float64(l.batch) / l.rate)
		go func() {
			defer close(jobs)
			for k := 0; k < nreq; k++ {
				at := res.start.Add(time.Duration(k) * interval)
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
				case jobs <- job{k, at}:
				case <-ctx.Done():
					return
				}
				if k == nreq-1 {
					late.Store(int64(time.Since(at)))
				}
			}
		}()
	} else {
		go func() {
			defer close(jobs)
			for {
				k := int(next.Add(1) - 1)
				if k >= nreq {
					return
				}
				select {
				case jobs <- job{k: k}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	for range l.publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := range jobs {
				lo := j.k * l.batch
				hi := min(lo+l.batch, l.events)
				sent := j.at
				if sent.IsZero() {
					sent = time.Now()
				}
				buf = l.body(buf[:0], lo, hi, sent.UnixNano())
				ctype := "application/cloudevents+json"
				if l.batch > 1 {
					ctype = "application/cloudevents-batch+json"
				}
				d, u, tries, err := publishOnce(ctx, c, ctype, buf)
				requests.Add(int64(tries))
				retries.Add(int64(tries - 1))
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("publishing events %d–%d: %w", lo, hi-1, err))
					}
					return
				}
				dels.Add(d)
				dups.Add(u)
				l.accepted.Add(int64(hi - lo))
				now := time.Now().UnixNano()
				for {
					v := lastNano.Load()
					if now <= v || lastNano.CompareAndSwap(v, now) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	res.Accepted = l.accepted.Load()
	res.Deliveries, res.Duplicates = dels.Load(), dups.Load()
	res.Requests, res.Retries = requests.Load(), retries.Load()
	res.end = time.Unix(0, lastNano.Load())
	if lastNano.Load() == 0 {
		res.end = time.Now()
	}
	res.Late = time.Duration(late.Load())
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr == nil && res.Accepted != int64(l.events) {
		firstErr = fmt.Errorf("published %d of %d events", res.Accepted, l.events)
	}
	return res, firstErr
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
func eventData(size int) []byte {
	const head = `{"bench":true,"pad":"`
	pad := max(size-len(head)-2, 0)
	b := make([]byte, 0, len(head)+pad+2)
	b = append(b, head...)
	for i := range pad {
		b = append(b, 'a'+byte(i%26))
	}
	return append(b, `"}`...)
}
