package server_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// stepRetries drives a failing delivery through its schedule on the fake
// clock: each time the delivery is pending it checks the next attempt time
// against want(k) (k = retry number, 1-based, as an offset from the start),
// moves the clock there and waits for the attempt. It returns the final
// delivery.
func stepRetries(b *bundle, subID string, retries int, want func(k int) time.Duration) delivery {
	b.t.Helper()
	d := b.waitDelivery(subID, "first attempt", func(d delivery) bool { return d.Attempts == 1 })
	for k := 1; k <= retries; k++ {
		if d.Status != "pending" || d.NextAttemptAt == nil {
			b.t.Fatalf("retry %d: delivery is %s, want pending", k, d.Status)
		}
		at := start.Add(want(k))
		if !d.NextAttemptAt.Equal(at) {
			b.t.Fatalf("retry %d scheduled at +%s, want +%s", k, d.NextAttemptAt.Sub(start), want(k))
		}
		b.clk.Set(at)
		d = b.waitDelivery(subID, "retry "+strconv.Itoa(k), func(d delivery) bool { return d.Attempts == k+1 })
	}
	return d
}

func TestWorkfront48HourScheduleOnFakeClock(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusInternalServerError))
	sub := b.subscribe(map[string]any{"name": "wf", "url": rc.URL, "retry_policy": map[string]any{"preset": "workfront"}})
	b.publish("evt-1", "task.updated")

	// Workfront's schedule: retry k at t0 + (2^k − 1) × 84.8 s; t0 is the
	// first failure (the fake clock does not move during an attempt, so
	// t0 = start).
	d := stepRetries(b, sub, 11, func(k int) time.Duration {
		return time.Duration((1<<k)-1) * 84800 * time.Millisecond
	})
	if d.Status != "dead_lettered" || d.DeadLetterReason == nil || *d.DeadLetterReason != "MaxDeliveryAttemptsExceeded" {
		t.Fatalf("after 12 attempts: %+v", d)
	}
	if got := b.clk.Now().Sub(start); got != seconds(173585.6) {
		t.Fatalf("11th retry at +%s, want 173585.6s", got)
	}
	if rc.count() != 12 {
		t.Fatalf("receiver got %d requests, want 12", rc.count())
	}
	first := rc.request(0).header.Get("Webhook-Id")
	for i := 0; i < 12; i++ {
		h := rc.request(i).header
		if h.Get("Webhook-Id") != first || h.Get("Herald-Delivery-Attempt") != strconv.Itoa(i+1) {
			t.Fatalf("request %d: webhook-id %q attempt %q", i, h.Get("Webhook-Id"), h.Get("Herald-Delivery-Attempt"))
		}
	}
	as := b.attempts(d.ID)
	if len(as) != 12 || as[11].Outcome != "http_500" || !as[11].StartedAt.Equal(start.Add(seconds(173585.6))) {
		t.Fatalf("attempt log: %d rows, last %+v", len(as), as[len(as)-1])
	}
}

func TestEventGridTTLDeadLetters(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusInternalServerError))
	sub := b.subscribe(map[string]any{"name": "eg", "url": rc.URL,
		"retry_policy": map[string]any{"preset": "eventgrid", "ttl": "1m", "jitter": 0}})
	b.publish("evt-1", "x")
	// Gaps 10 s, 30 s; the third gap (1 min) would land at 100 s, past the
	// 60 s ttl, so the third failure dead-letters at once.
	offsets := []time.Duration{10 * time.Second, 40 * time.Second}
	d := stepRetries(b, sub, 2, func(k int) time.Duration { return offsets[k-1] })
	if d.Status != "dead_lettered" || *d.DeadLetterReason != "TimeToLiveExceeded" || d.Attempts != 3 {
		t.Fatalf("want TimeToLiveExceeded after 3 attempts: %+v", d)
	}
}

func TestDeadLetterOffDrops(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusBadRequest))
	sub := b.subscribe(map[string]any{"name": "drop", "url": rc.URL, "dead_letter": false})
	b.publish("evt-1", "x")
	d := b.waitDelivery(sub, "dropped", func(d delivery) bool { return d.Status == "dropped" })
	if *d.DeadLetterReason != "NonRetriableStatus" || d.Attempts != 1 {
		t.Fatalf("dropped delivery: %+v", d)
	}
	var dl struct{ Data []delivery }
	b.do("GET", "/v1/dead-letters?subscription_id="+sub, nil, &dl)
	if len(dl.Data) != 0 {
		t.Fatalf("a dropped delivery is not a dead letter: %+v", dl.Data)
	}
}

// TestEventGridStatusRules checks Event Grid's status-code rules code by
// code: which codes succeed (200..204), which dead-letter at once (400, 401,
// 403, 404, 413), and the minimum delay of the others (408 ≥ 2 min,
// 503 ≥ 30 s, any other ≥ 10 s).
func TestEventGridStatusRules(t *testing.T) {
	cases := []struct {
		code     int
		header   string // Retry-After
		status   string
		reason   string
		minDelay time.Duration // for retried codes: next attempt at start + this
	}{
		{200, "", "delivered", "", 0},
		{201, "", "delivered", "", 0},
		{202, "", "delivered", "", 0},
		{203, "", "delivered", "", 0},
		{204, "", "delivered", "", 0},
		{205, "", "pending", "", 10 * time.Second},
		{206, "", "pending", "", 10 * time.Second},
		{400, "", "dead_lettered", "NonRetriableStatus", 0},
		{401, "", "dead_lettered", "NonRetriableStatus", 0},
		{403, "", "dead_lettered", "NonRetriableStatus", 0},
		{404, "", "dead_lettered", "NonRetriableStatus", 0},
		{413, "", "dead_lettered", "NonRetriableStatus", 0},
		{408, "", "pending", "", 2 * time.Minute},
		{503, "", "pending", "", 30 * time.Second},
		{500, "", "pending", "", 10 * time.Second},
		{429, "", "pending", "", 10 * time.Second},
		{429, "120", "pending", "", 120 * time.Second},
		{503, "7200", "pending", "", time.Hour}, // Retry-After capped at 1 h
		{503, start.Add(5 * time.Minute).Format(http.TimeFormat), "pending", "", 5 * time.Minute},
		{500, "120", "pending", "", 10 * time.Second}, // Retry-After only on 429 and 503
	}
	b := setup(t)
	for i, c := range cases {
		c := c
		rc := newReceiver(t, func(_ int, _ *http.Request, w http.ResponseWriter) {
			if c.header != "" {
				w.Header().Set("Retry-After", c.header)
			}
			w.WriteHeader(c.code)
		})
		typ := "t" + strconv.Itoa(i)
		sub := b.subscribe(map[string]any{"name": "s" + strconv.Itoa(i), "url": rc.URL, "event_types": []string{typ},
			"retry_policy": map[string]any{"jitter": 0}})
		b.publish("evt-"+strconv.Itoa(i), typ)
		d := b.waitDelivery(sub, "first attempt", func(d delivery) bool { return d.Attempts == 1 })
		if d.Status != c.status {
			t.Errorf("%d %q: status %s, want %s", c.code, c.header, d.Status, c.status)
			continue
		}
		if c.reason != "" && (d.DeadLetterReason == nil || *d.DeadLetterReason != c.reason) {
			t.Errorf("%d: reason %v, want %s", c.code, d.DeadLetterReason, c.reason)
		}
		if c.status == "pending" && !d.NextAttemptAt.Equal(start.Add(c.minDelay)) {
			t.Errorf("%d %q: next attempt at +%s, want +%s", c.code, c.header, d.NextAttemptAt.Sub(start), c.minDelay)
		}
		if d.LastOutcome == nil || *d.LastOutcome != "http_"+strconv.Itoa(c.code) {
			t.Errorf("%d: last_outcome %v", c.code, d.LastOutcome)
		}
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	b := setup(t)
	target := newReceiver(t, status(http.StatusOK))
	rc := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	})
	sub := b.subscribe(map[string]any{"name": "redir", "url": rc.URL})
	b.publish("evt-1", "x")
	d := b.waitDelivery(sub, "first attempt", func(d delivery) bool { return d.Attempts == 1 })
	if d.Status != "pending" || *d.LastOutcome != "http_302" {
		t.Fatalf("a 3xx is a failure to retry: %+v", d)
	}
	if target.count() != 0 {
		t.Fatalf("redirect was followed: target got %d requests", target.count())
	}
}

func TestTransportOutcomes(t *testing.T) {
	b := setup(t)
	hang := make(chan struct{})
	slow := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(hang) })
	closed := newReceiver(t, status(200))
	closedURL := closed.URL
	closed.Close() // nothing listens there any more

	subSlow := b.subscribe(map[string]any{"name": "slow", "url": slow.URL, "timeout": "200ms"})
	subRefused := b.subscribe(map[string]any{"name": "refused", "url": closedURL})
	b.publish("evt-1", "x")
	d := b.waitDelivery(subSlow, "timeout", func(d delivery) bool { return d.Attempts == 1 })
	if *d.LastOutcome != "timeout" || d.LastStatusCode != nil || d.Status != "pending" {
		t.Fatalf("timeout outcome: %+v", d)
	}
	d = b.waitDelivery(subRefused, "refused", func(d delivery) bool { return d.Attempts == 1 })
	if *d.LastOutcome != "connection_refused" {
		t.Fatalf("refused outcome: %+v", d)
	}
	as := b.attempts(d.ID)
	if len(as) != 1 || as[0].Error == nil || *as[0].Error == "" {
		t.Fatalf("attempt log keeps the error: %+v", as)
	}
}
