package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// The console scenario's store and timings.
const (
	// consoleTypes: event n goes to subscription n mod consoleTypes; the
	// last but one dead-letters it, the last (pull) keeps it queued, the
	// others are delivered.
	consoleTypes = 20
	// consoleSamples: requests timed of each page, one after another.
	consoleSamples = 50
	// budgetPage: the console's pages and the API's lists, median.
	budgetPage = 100 * time.Millisecond
	// deadLetterAtOnce gives up after the first attempt (answered 500).
	deadLetterAtOnce = `{"preset":"custom","delays":["1s"],"max_attempts":1}`
)

// consoleScenario: --console-deliveries events published --batch a request
// by --publishers, event n to subscription n mod 20: 18 push subscriptions
// whose receivers answer 200 (delivered), one whose receiver answers 500
// with a policy of one attempt (dead-lettered), one pull subscription
// nobody receives from (queued). Once every push delivery has ended, a
// console session signed in with the admin key and the API with the key
// each GET every page consoleSamples times, one after another, and the
// scenario reports the median and p99 of each; the budget line is the
// slowest median.
func consoleScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	rs, ids, err := consoleSubscriptions(ctx, e)
	if err != nil {
		return err
	}
	l := &load{prefix: prefix(e.name, "fill"), events: s.ConsoleDeliveries, batch: s.Batch, publishers: s.Publishers,
		data: eventData(s.PayloadBytes), typeOf: func(n int) string { return typeName(n % consoleTypes) }}
	lat := &recorder{}
	p := &phase{name: "fill", load: l, expect: map[*Receiver]int{}, lat: map[*Receiver]*recorder{}}
	for k, r := range rs {
		p.expect[r] = count(l.events, func(n int) bool { return n%consoleTypes == k })
		p.lat[r] = lat
	}
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		res.Phases = append(res.Phases, pr.result("fill", rs, l.events-count(l.events, isQueued), lat))
	}
	if err != nil {
		return err
	}
	e.prog.set(func() string { return e.name + ": waiting until the dead-letters are written" })
	if err := waitSubscriptionSettled(ctx, e, ids[consoleTypes-2]); err != nil {
		return err
	}
	pages, err := consolePages(ctx, e, ids[0], pr.load.start, pr.load.end)
	if err != nil {
		return err
	}
	res.figure("deliveries stored", float64(l.events), "")
	return timePages(ctx, e, res, pages)
}

func isQueued(n int) bool { return n%consoleTypes == consoleTypes-1 }

// consoleSubscriptions creates the scenario's subscriptions and returns
// the push ones' receivers and every subscription's id (type k's at k).
func consoleSubscriptions(ctx context.Context, e *env) ([]*Receiver, []string, error) {
	var rs []*Receiver
	var ids []string
	for k := range consoleTypes {
		sub := subscription{Name: fmt.Sprintf("console-%02d", k), EventTypes: []string{typeName(k)}}
		var r *Receiver
		switch k {
		case consoleTypes - 1:
			sub.DeliveryMode = "pull"
		default:
			var err error
			if r, err = startReceiver("/hook/"+sub.Name, false); err != nil {
				return nil, nil, err
			}
			e.recv = append(e.recv, r)
			sub.URL = r.URL
			if k == consoleTypes-2 {
				r.mode.Store(modeFailFirst)
				sub.RetryPolicy = json.RawMessage(deadLetterAtOnce)
			}
			rs = append(rs, r)
		}
		id, err := e.api.createSubscription(ctx, sub)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
	}
	return rs, ids, nil
}

// waitSubscriptionSettled polls until subscription id lists no pending
// delivery.
func waitSubscriptionSettled(ctx context.Context, e *env, id string) error {
	path := "/v1/deliveries?status=pending&limit=1&subscription_id=" + url.QueryEscape(id)
	for {
		var out struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := e.api.getJSON(ctx, path, &out); err != nil {
			return err
		}
		if len(out.Data) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deliveries to %s still pending: %w", id, ctx.Err())
		case <-time.After(pendingEvery):
		}
	}
}

// getJSON GETs path with the key and decodes a 200's body into out.
func (c *client) getJSON(ctx context.Context, path string, out any) error {
	code, body, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// timedPage is one page the scenario times: a console page (with the
// session) or an API route (with the key).
type timedPage struct {
	path    string
	label   string // the path with its ids and times as placeholders
	console bool
}

// consolePages lists the pages to time: sub is a delivered subscription's
// id, from…to the fill's time (its middle third is the time range).
// ?status=queued lists the pull subscription's deliveries (with their
// events); sub's dead-lettered deliveries are none, the page a search that
// matches nothing among 1 in 20 of the deliveries.
func consolePages(ctx context.Context, e *env, sub string, from, to time.Time) ([]timedPage, error) {
	var one struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := e.api.getJSON(ctx, "/v1/deliveries?limit=1&subscription_id="+url.QueryEscape(sub), &one); err != nil {
		return nil, err
	}
	if len(one.Data) == 0 {
		return nil, fmt.Errorf("no delivery of subscription %s listed", sub)
	}
	third := to.Sub(from) / 3
	const minute = "2006-01-02T15:04"
	since, before := from.Add(third).UTC().Format(minute), to.Add(-third).UTC().Format(minute)
	if since == before {
		before = from.Add(third).Add(time.Minute).UTC().Format(minute)
	}
	// The label is the path with {sub}, {id}, {since} and {before}; the
	// path, the label with them filled in.
	fill := strings.NewReplacer("{sub}", url.QueryEscape(sub), "{id}", url.QueryEscape(one.Data[0].ID),
		"{since}", url.QueryEscape(since), "{before}", url.QueryEscape(before))
	var pages []timedPage
	for _, l := range []string{"/console/", "/console/subscriptions", "/console/deliveries",
		"/console/deliveries?status=dead_lettered", "/console/deliveries?subscription_id={sub}",
		"/console/deliveries?since={since}&before={before}", "/console/deliveries/{id}",
		"/console/deliveries?status=queued", "/console/deliveries?subscription_id={sub}&status=dead_lettered",
		"/console/dead-letters", "/console/endpoints",
		"/v1/subscriptions", "/v1/deliveries", "/v1/deliveries?status=dead_lettered", "/v1/deliveries?status=queued",
		"/v1/deliveries?subscription_id={sub}", "/v1/deliveries?subscription_id={sub}&status=dead_lettered",
		"/v1/deliveries/{id}", "/v1/dead-letters", "/v1/endpoints"} {
		pages = append(pages, timedPage{path: fill.Replace(l), label: l, console: strings.HasPrefix(l, "/console/")})
	}
	return pages, nil
}

// timePages signs a console session in and GETs each page consoleSamples
// times, reporting the median and p99 of each and checking the slowest
// median against budgetPage.
func timePages(ctx context.Context, e *env, res *Result, pages []timedPage) error {
	session, err := consoleSession(ctx, e)
	if err != nil {
		return err
	}
	var worst time.Duration
	var worstPath string
	for i, pg := range pages {
		e.prog.set(func() string { return fmt.Sprintf("%s: timing %s (%d/%d)", e.name, pg.label, i+1, len(pages)) })
		lat := &recorder{}
		for range consoleSamples {
			d, err := timeOne(ctx, e, session, pg)
			if err != nil {
				return err
			}
			lat.add(d)
		}
		sum := lat.summary()
		res.figure("GET "+pg.label+" median", float64(sum.P50.Microseconds())/1000, "ms")
		res.figure("GET "+pg.label+" p99", float64(sum.P99.Microseconds())/1000, "ms")
		if sum.P50 > worst {
			worst, worstPath = sum.P50, pg.label
		}
	}
	res.check(fmt.Sprintf("a page answers with %s deliveries stored (slowest median of %d requests)", thousands(float64(e.cfg.Sizes.ConsoleDeliveries)), consoleSamples),
		"< 100 ms", fmtMs(worst)+" ("+worstPath+")", worst < budgetPage)
	return nil
}

// consoleSession signs in at /console/login with the admin key and returns
// a client that holds the session's cookie.
func consoleSession(ctx context.Context, e *env) (*http.Client, error) {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"key": {e.launch.adminKey}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.url+"/console/login", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("POST /console/login: %d, want a redirect", resp.StatusCode)
	}
	return hc, nil
}

// timeOne GETs pg once, reading the whole body, and returns how long it
// took; any status but 200 is an error.
func timeOne(ctx context.Context, e *env, session *http.Client, pg timedPage) (time.Duration, error) {
	start := time.Now()
	if !pg.console {
		code, body, err := e.api.do(ctx, http.MethodGet, pg.path, "", nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s: %d %s", pg.path, code, strings.TrimSpace(string(body)))
		}
		return time.Since(start), err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.url+pg.path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := session.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s (console): %d", pg.path, resp.StatusCode)
	}
	return d, err
}
