package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The pull scenario's receive parameters besides max_events (--pull-batch).
const (
	pullMaxWait  = "1s"  // long-poll of each receive
	pullLockFor  = "60s" // each lock: far longer than a receive→acknowledge round
	pullType     = "bench.pull"
	consumeTries = 4 // sends of one receive or acknowledge answered 429/5xx
)

// budgetPullVsPush: pull deliveries/s on the embedded store vs. steady-batch
// (push) in the same invocation.
const budgetPullVsPush = 1.0

// errPullDone ends the consumers once the phase is over.
var errPullDone = errors.New("pull phase over")

// pullScenario: one pull subscription, events published --batch a request by
// --publishers, and --consumers consumers each looping receive (up to
// --pull-batch) → acknowledge until every event was acknowledged. The phase
// counts acknowledged deliveries; its latency is publish→receive.
func pullScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	id, err := e.api.createSubscription(ctx, subscription{Name: "pull", DeliveryMode: "pull", EventTypes: []string{pullType}})
	if err != nil {
		return err
	}
	l := &load{prefix: prefix(e.name, "main"), events: s.PullEvents, batch: s.Batch, publishers: s.Publishers,
		data: eventData(s.PayloadBytes), typeOf: func(int) string { return pullType }}
	// sink stands for the consumers in the phase's accounting: its track
	// counts acknowledgements. It is never started.
	sink := &Receiver{URL: "pull:" + id}
	lat := &recorder{}
	p := &phase{load: l, expect: map[*Receiver]int{sink: l.events}, lat: map[*Receiver]*recorder{sink: {}}}
	pl := newPuller(e.api, id, s.PullBatch, sink, lat, int64(l.events))

	// The consumers wait (long-poll) from before the first publish, as
	// consumers of a live subscription do.
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for range s.Consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pl.consume(pctx); err != nil && pctx.Err() == nil {
				stop(fmt.Errorf("consumer: %w", err))
			}
		}()
	}
	pr, err := e.run(pctx, p)
	stop(errPullDone)
	wg.Wait()
	if cause := context.Cause(pctx); err != nil && cause != nil && !errors.Is(cause, errPullDone) && ctx.Err() == nil {
		err = cause // a consumer failed: that, not "canceled", is the news
	}
	var settle time.Duration
	if err == nil {
		t0 := time.Now()
		e.prog.set(func() string { return e.name + ": checking that nothing is left queued" })
		err = e.waitNoneQueued(ctx, id)
		settle = time.Since(t0)
	}
	if pr != nil && pr.load.Accepted > 0 {
		ph := pr.result("", []*Receiver{sink}, l.events, lat)
		ph.Duplicates = pl.dupReceives.Load()
		ph.SettleSeconds = settle.Seconds()
		res.Phases = append(res.Phases, ph)
		res.figure("consumers", float64(s.Consumers), "")
		res.figure("receive calls", float64(pl.receives.Load()), "")
		res.figure("receives that returned nothing", float64(pl.empty.Load()), "")
		if n := pl.receives.Load() - pl.empty.Load(); n > 0 {
			res.figure("deliveries a non-empty receive (mean)", float64(pl.items.Load())/float64(n), "")
		}
		res.figure("distinct deliveries received", float64(pl.distinct()), "")
		res.figure("duplicate receives (a delivery received again)", float64(pl.dupReceives.Load()), "")
		res.figure("acknowledgements refused (lock lost)", float64(pl.lockLost.Load()), "")
		if n := pl.stale.Load(); n > 0 {
			res.figure("received events of no current phase", float64(n), "")
		}
		if n := pl.retries.Load(); n > 0 {
			res.figure("consumer calls sent again (429/5xx/transport)", float64(n), "")
		}
	}
	return err
}

// puller is the state the consumers of one pull phase share.
type puller struct {
	c       *client
	path    string // /v1/subscriptions/{id}/
	receive []byte // receive's request body
	sink    *Receiver
	lat     *recorder
	want    int64 // acknowledgements that end the phase

	mu   sync.Mutex
	seen map[string]struct{} // delivery ids received

	receives, empty, items       atomic.Int64
	dupReceives, lockLost, stale atomic.Int64
	retries                      atomic.Int64
}

func newPuller(c *client, subID string, batch int, sink *Receiver, lat *recorder, want int64) *puller {
	body, _ := json.Marshal(map[string]any{"max_events": batch, "max_wait": pullMaxWait, "lock_duration": pullLockFor})
	return &puller{c: c, path: "/v1/subscriptions/" + url.PathEscape(subID) + "/", receive: body,
		sink: sink, lat: lat, want: want, seen: map[string]struct{}{}}
}

func (p *puller) distinct() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// done reports whether every delivery the phase expects was acknowledged.
func (p *puller) done() bool {
	t := p.sink.cur.Load()
	return t != nil && t.unique.Load() >= p.want
}

// receivedItem is one delivery of a receive's answer.
type receivedItem struct {
	LockToken  string `json:"lock_token"`
	DeliveryID string `json:"delivery_id"`
	Event      struct {
		ID   string `json:"id"`
		Sent string `json:"benchsent"`
	} `json:"event"`
}

// consume loops receive → acknowledge until every expected delivery was
// acknowledged or ctx ends (then it returns ctx's error).
func (p *puller) consume(ctx context.Context) error {
	var toks []string
	num := map[string]int{} // lock token → event number (−1: none)
	for !p.done() {
		items, now, err := p.receiveOnce(ctx)
		if err != nil {
			return err
		}
		p.receives.Add(1)
		if len(items) == 0 {
			p.empty.Add(1)
			continue
		}
		p.items.Add(int64(len(items)))
		t := p.sink.cur.Load()
		toks = toks[:0]
		clear(num)
		for _, it := range items {
			n := -1
			if t != nil {
				if m, ok := eventNumber(it.Event.ID, t.prefix, t.uuids); ok {
					n = m
				}
			}
			if n < 0 {
				p.stale.Add(1)
			}
			p.mu.Lock()
			_, dup := p.seen[it.DeliveryID]
			if !dup {
				p.seen[it.DeliveryID] = struct{}{}
			}
			p.mu.Unlock()
			if dup {
				p.dupReceives.Add(1)
			} else if sent, err := strconv.ParseInt(it.Event.Sent, 10, 64); err == nil && sent > 0 && n >= 0 {
				p.lat.add(time.Duration(now - sent))
			}
			toks = append(toks, it.LockToken)
			num[it.LockToken] = n
		}
		ok, lost, err := p.acknowledge(ctx, toks)
		if err != nil {
			return err
		}
		acked := time.Now().UnixNano()
		p.lockLost.Add(int64(lost))
		for _, tok := range ok {
			if n, found := num[tok]; found && n >= 0 && t != nil {
				t.mark(n, acked, 0)
			}
		}
	}
	return nil
}

// receiveOnce sends one receive and returns what it got and when the answer
// arrived (UnixNano). A 429, a 5xx or a transport error is tried again: any
// locks a lost answer took expire and the deliveries come back.
func (p *puller) receiveOnce(ctx context.Context) ([]receivedItem, int64, error) {
	code, resp, err := p.call(ctx, "receive", p.receive, true)
	now := time.Now().UnixNano()
	if err != nil {
		return nil, 0, err
	}
	if code != http.StatusOK {
		return nil, 0, fmt.Errorf("receive answered %d: %.300s", code, bytes.TrimSpace(resp))
	}
	var out struct {
		Data []receivedItem `json:"data"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, 0, fmt.Errorf("receive's answer: %v", err)
	}
	return out.Data, now, nil
}

// acknowledge acknowledges tokens and returns those that succeeded and how
// many failed (their lock was lost). Only an answered 429 or 5xx is tried
// again (the settle is one transaction, undone): after a transport error
// whether it was applied is unknown, so that fails the consumer.
func (p *puller) acknowledge(ctx context.Context, tokens []string) (ok []string, lost int, err error) {
	body, _ := json.Marshal(map[string]any{"lock_tokens": tokens})
	code, resp, err := p.call(ctx, "acknowledge", body, false)
	if err != nil {
		return nil, 0, err
	}
	if code != http.StatusOK {
		return nil, 0, fmt.Errorf("acknowledge answered %d: %.300s", code, bytes.TrimSpace(resp))
	}
	var out struct {
		Succeeded []string          `json:"succeeded"`
		Failed    []json.RawMessage `json:"failed"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, 0, fmt.Errorf("acknowledge's answer: %v", err)
	}
	if len(out.Succeeded)+len(out.Failed) != len(tokens) {
		return nil, 0, fmt.Errorf("acknowledge answered for %d+%d of %d tokens", len(out.Succeeded), len(out.Failed), len(tokens))
	}
	return out.Succeeded, len(out.Failed), nil
}

// call posts a consumer's call, sending it again after a pause when it is
// answered 429 or 5xx, or (retryTransport) fails in transport.
func (p *puller) call(ctx context.Context, action string, body []byte, retryTransport bool) (int, []byte, error) {
	pause := 100 * time.Millisecond
	for tries := 1; ; tries++ {
		code, resp, err := p.c.do(ctx, http.MethodPost, p.path+action, "application/json", body)
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		transient := err == nil && (code == http.StatusTooManyRequests || code >= 500)
		if err == nil && !transient {
			return code, resp, nil
		}
		if err != nil && !retryTransport {
			return 0, nil, fmt.Errorf("%s: %w", action, err)
		}
		if tries >= consumeTries {
			if err != nil {
				return 0, nil, fmt.Errorf("%s: %w", action, err)
			}
			return code, resp, nil
		}
		p.retries.Add(1)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
		pause *= 2
	}
}

// waitNoneQueued polls until the subscription has no queued delivery: once
// every event was acknowledged, none should be.
func (e *env) waitNoneQueued(ctx context.Context, subID string) error {
	for {
		queued, err := e.api.anyQueued(ctx, subID)
		if err != nil {
			return err
		}
		if !queued {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deliveries still queued after every event was acknowledged: %w", ctx.Err())
		case <-time.After(pendingEvery):
		}
		if !e.srv.alive() {
			return errExited
		}
	}
}

// anyQueued reports whether the server lists a queued delivery of the
// subscription.
func (c *client) anyQueued(ctx context.Context, subID string) (bool, error) {
	code, resp, err := c.do(ctx, http.MethodGet, "/v1/deliveries?status=queued&limit=1&subscription_id="+url.QueryEscape(subID), "", nil)
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("listing queued deliveries: %d %s", code, bytes.TrimSpace(resp))
	}
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return false, fmt.Errorf("listing queued deliveries: %v", err)
	}
	return len(out.Data) > 0, nil
}

// comparePullPush adds to the pull scenario's result the line comparing its
// deliveries/s with the push path's (steady-batch, on Herald) in the same
// invocation and run (--runs), whichever ran first. On the embedded store it is a budget line (pull
// should reach at least the push path's rate); on PostgreSQL it is shown
// without being one.
func comparePullPush(results []Result, postgres bool) {
	for i := range results {
		pull := &results[i]
		if pull.Scenario != "pull" || pull.Target == targetBaseline {
			continue
		}
		comparePullWith(pull, steadyBatchOf(results, pull.Run), postgres)
	}
}

// steadyBatchOf is the steady-batch result of run (--runs) on Herald among
// results (nil: none).
func steadyBatchOf(results []Result, run int) *Result {
	var push *Result
	for j := range results {
		r := &results[j]
		if r.Scenario == "steady-batch" && r.Target != targetBaseline && r.Run == run {
			push = r
		}
	}
	return push
}

func comparePullWith(pull, push *Result, postgres bool) {
	if !pull.OK || len(pull.Phases) == 0 {
		return
	}
	line := "pull deliveries/s vs. the push path's (steady-batch), embedded store"
	if postgres {
		line = "pull deliveries/s vs. the push path's (steady-batch), PostgreSQL store (not a budget line)"
	}
	const budget = "≥ 100 % of steady-batch"
	switch {
	case push == nil:
		pull.Budget = append(pull.Budget, Check{Line: line, Budget: budget, NotMeasured: true,
			Measured: "not measured: steady-batch was not run in this invocation (--scenario steady-batch,pull)"})
		return
	case !push.OK || len(push.Phases) == 0 || push.Phases[0].DeliveriesPerSec <= 0:
		pull.Budget = append(pull.Budget, Check{Line: line, Budget: budget, NotMeasured: true,
			Measured: "not measured: steady-batch did not finish"})
		return
	}
	pullRate, pushRate := pull.Phases[0].DeliveriesPerSec, push.Phases[0].DeliveriesPerSec
	ratio := pullRate / pushRate
	pull.figure("pull deliveries/s vs. steady-batch's", ratio*100, "%")
	pull.check(line, budget, fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(pullRate), thousands(pushRate)), ratio >= budgetPullVsPush)
}
