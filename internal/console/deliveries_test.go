package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// receiver is a real HTTP endpoint on 127.0.0.1 for push subscriptions.
// Its paths answer: /dead 400 (Herald dead-letters at once) until cured,
// then 200; /flaky 503 (Herald retries) to its first request, then 200;
// /hold waits, before answering 200, until the test releases it; /down (and
// paths under it) 500, always; any other 200.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	cured   bool
	flakies int
	held    chan struct{} // a request to /hold arrived
	release chan struct{} // closed: /hold answers
	got     []string      // the paths of the requests, in order
}

// paths returns the paths of the requests the receiver got, in order.
func (rc *receiver) paths() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{held: make(chan struct{}, 16), release: make(chan struct{})}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.answer))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) answer(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.got = append(rc.got, r.URL.Path)
	cured := rc.cured
	rc.flakies += boolInt(r.URL.Path == "/flaky")
	first := rc.flakies == 1 && r.URL.Path == "/flaky"
	rc.mu.Unlock()
	switch {
	case r.URL.Path == "/dead" && !cured:
		http.Error(w, "<b>no such order</b>", http.StatusBadRequest)
	case first:
		http.Error(w, "busy, try later", http.StatusServiceUnavailable)
	case strings.HasPrefix(r.URL.Path, "/down"):
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
	case r.URL.Path == "/hold":
		rc.held <- struct{}{}
		<-rc.release
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cure makes /dead answer 200 from now on.
func (rc *receiver) cure() {
	rc.mu.Lock()
	rc.cured = true
	rc.mu.Unlock()
}

// eventually waits, polling, until cond holds (for at most 60 s): for
// the engine's work that follows a request, such as an attempt's outcome.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// deliveriesOf returns the subscription's deliveries in the store, newest
// first.
func (n *node) deliveriesOf(sub string) []delivery.Delivery {
	n.t.Helper()
	ds, _, err := n.srv.Store.ListDeliveries(context.Background(), store.DeliveryFilter{SubscriptionID: sub, Page: store.Page{Limit: store.MaxLimit}})
	if err != nil {
		n.t.Fatal(err)
	}
	return ds
}

// delivery returns one delivery from the store.
func (n *node) delivery(id string) delivery.Delivery {
	n.t.Helper()
	d, err := n.srv.Store.GetDelivery(context.Background(), id)
	if err != nil {
		n.t.Fatal(err)
	}
	return d
}

// publish publishes an event of id with key.
func (n *node) publish(key, id string) {
	n.t.Helper()
	n.must(http.StatusAccepted, key, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": id, "source": "/shop", "type": "order.paid"})
}

// deadLetters publishes an event for each of evIDs to sub (pushing to
// rc's /dead) with key, and waits until each of the subscription's
// deliveries is dead-lettered; it returns their IDs, newest first.
func (n *node) deadLetters(key, sub string, evIDs ...string) []string {
	n.t.Helper()
	for _, id := range evIDs {
		n.publish(key, id)
	}
	var out []string
	eventually(n.t, "the deliveries dead-lettered", func() bool {
		out = out[:0]
		for _, d := range n.deliveriesOf(sub) {
			if d.Status == delivery.StatusDeadLettered {
				out = append(out, d.ID)
			}
		}
		return len(out) >= len(evIDs)
	})
	return out
}

// twoTenants makes two accounts with an account key each, and no
// subscription.
func twoTenants(n *node) (ts tenants) {
	n.t.Helper()
	ts.shop, _, ts.shopKey = n.tenant("shop", "account")
	ts.rival, _, ts.rivalKey = n.tenant("rival", "account")
	return ts
}

// pullSubscription makes a pull subscription named "pull" in the account
// of key, whose deliveries stay queued, and returns its ID.
func (n *node) pullSubscription(key string) string {
	n.t.Helper()
	return n.must(http.StatusCreated, key, "POST", "/v1/subscriptions", map[string]any{"name": "pull", "delivery_mode": "pull"})["id"].(string)
}

// ofEvent returns the IDs of the deliveries of ds of the event evID.
func ofEvent(evID string, ds []delivery.Delivery) []string {
	var out []string
	for _, d := range ds {
		if d.EventID == evID {
			out = append(out, d.ID)
		}
	}
	return out
}

var deliveryLink = regexp.MustCompile(`href="/console/deliveries/(dlv_[0-9a-z]+)"`)

// deliveriesListed returns the IDs of the deliveries a page links to, in
// order.
func deliveriesListed(p page) []string {
	var out []string
	for _, m := range deliveryLink.FindAllStringSubmatch(p.body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestDeliveriesSearch: the deliveries page of an account key lists its
// account's deliveries only, newest first, filtered by status,
// subscription, event id and time range (in any combination); a value
// shown is escaped; a status or time that is not valid is a 400 page
// naming the field; another account's delivery is a 404 page.
func TestDeliveriesSearch(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	ts := twoTenants(n)
	pull := n.pullSubscription(ts.shopKey)
	n.publish(ts.shopKey, "evt-early")
	n.clk.Advance(time.Hour)
	dead := n.subscribe(ts.shopKey, "dead", rc.URL+"/dead")
	deadIDs := n.deadLetters(ts.shopKey, dead, markupName, "evt-late")
	queued := n.deliveriesOf(pull) // newest first
	rivalPull := n.pullSubscription(ts.rivalKey)
	n.publish(ts.rivalKey, "evt-rival")
	rivalDs := n.deliveriesOf(rivalPull)
	cookie := n.signIn(ts.shopKey)

	late := ofEvent("evt-late", append(n.deliveriesOf(dead), queued...))
	if len(late) != 2 {
		t.Fatalf("evt-late has %d deliveries; want 2 (pull and dead)", len(late))
	}
	search := func(q url.Values) page { return n.get("/console/deliveries?"+q.Encode(), cookie) }
	for _, c := range []struct {
		name string
		q    url.Values
		want []string
	}{
		{"dead-lettered", url.Values{"status": {"dead_lettered"}}, deadIDs},
		{"queued", url.Values{"status": {"queued"}}, []string{queued[0].ID, queued[1].ID, queued[2].ID}},
		{"subscription", url.Values{"subscription_id": {pull}}, []string{queued[0].ID, queued[1].ID, queued[2].ID}},
		{"event id", url.Values{"event_id": {"evt-late"}}, late},
		{"published before", url.Values{"before": {start.Add(time.Minute).Format("2006-01-02T15:04")}}, []string{queued[2].ID}},
		{"published after, status", url.Values{"since": {start.Add(time.Hour).Format(time.RFC3339)}, "status": {"queued"}},
			[]string{queued[0].ID, queued[1].ID}},
		{"another account's subscription", url.Values{"subscription_id": {rivalDs[0].SubscriptionID}}, nil},
	} {
		p := search(c.q)
		got := deliveriesListed(p)
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if p.status != http.StatusOK || !slices.Equal(got, want) {
			t.Fatalf("%s: %d, listed %v; want %v\n%s", c.name, p.status, got, want, p.body)
		}
	}
	all := search(nil)
	if strings.Contains(all.body, markupName) || !strings.Contains(all.body, html.EscapeString(markupName)) || strings.Contains(all.body, rivalDs[0].ID) {
		t.Fatalf("the list shows an event id unescaped, or the rival's delivery:\n%s", all.body)
	}
	for q, field := range map[string]string{"status=failing": "status", "since=yesterday": "published after", "before=2026-13-01T00:00": "published before"} {
		if p := n.get("/console/deliveries?"+q, cookie); p.status != http.StatusBadRequest || !strings.Contains(p.body, field+":") || len(deliveriesListed(p)) != 0 {
			t.Fatalf("?%s: %d; want a 400 page naming %s\n%s", q, p.status, field, p.body)
		}
	}
	if p := n.get("/console/deliveries/"+rivalDs[0].ID, cookie); p.status != http.StatusNotFound || strings.Contains(p.body, "evt-rival") {
		t.Fatalf("the rival's delivery: %d; want a 404 page showing nothing of it\n%s", p.status, p.body)
	}
	if p := n.get("/console/deliveries/"+rivalDs[0].ID, n.signIn(adminKey)); p.status != http.StatusOK || !strings.Contains(p.body, "evt-rival") {
		t.Fatalf("the rival's delivery for the admin: %d\n%s", p.status, p.body)
	}
}

// TestDeliveriesPaged: the search shows 50 deliveries a page, newest
// first, the next page's link keeping the filter; a made-up cursor is a
// 400 page.
func TestDeliveriesPaged(t *testing.T) {
	n := setup(t)
	sub := n.pullSubscription(adminKey)
	for i := range 53 {
		n.publish(adminKey, fmt.Sprintf("evt-%02d", i))
	}
	var want []string
	for _, d := range n.deliveriesOf(sub) {
		want = append(want, d.ID)
	}
	cookie := n.signIn(adminKey)
	first := n.get("/console/deliveries?status=queued&subscription_id="+sub, cookie)
	next := nextPage(first)
	if got := deliveriesListed(first); !slices.Equal(got, want[:50]) || !strings.Contains(next, "status=queued") || !strings.Contains(next, sub) {
		t.Fatalf("the first page: %d deliveries, next %q; want the newest 50 and a next page keeping the filter", len(got), next)
	}
	second := n.get(next, cookie)
	if got := deliveriesListed(second); !slices.Equal(got, want[50:]) || nextPage(second) != "" {
		t.Fatalf("the second page: %v, next %q; want the oldest 3, no next page", got, nextPage(second))
	}
	if p := n.get("/console/deliveries?cursor=nonsense", cookie); p.status != http.StatusBadRequest || !strings.Contains(p.body, "cursor") {
		t.Fatalf("a made-up cursor: %d; want a 400 page naming the cursor\n%s", p.status, p.body)
	}
}

// deadFixture is a node with a receiver and two tenants, shop's
// subscription dead pushing to the receiver's /dead, its dead letters
// (newest first), and a session of shop's key.
type deadFixture struct {
	n      *node
	rc     *receiver
	ts     tenants
	dead   string
	ids    []string
	cookie *http.Cookie
}

// newDeadFixture makes a deadFixture with a dead letter for each of evIDs.
func newDeadFixture(t *testing.T, evIDs ...string) deadFixture {
	t.Helper()
	f := deadFixture{n: setup(t), rc: newReceiver(t)}
	f.ts = twoTenants(f.n)
	f.dead = f.n.subscribe(f.ts.shopKey, "dead", f.rc.URL+"/dead")
	f.ids = f.n.deadLetters(f.ts.shopKey, f.dead, evIDs...)
	f.cookie = f.n.signIn(f.ts.shopKey)
	return f
}

// TestRedeliverFromThePage: a delivery's page shows its attempts (time,
// status code, outcome, response excerpt, escaped); its Redeliver form
// without the session's CSRF token is refused (403) and changes nothing;
// with it, the delivery is due again and delivered, and the page says so.
// While an attempt is in progress, the page says it cannot redeliver
// (not an error page). Another account's key cannot redeliver it (404).
func TestRedeliverFromThePage(t *testing.T) {
	f := newDeadFixture(t, "evt-1")
	n, rc, ts, cookie, id := f.n, f.rc, f.ts, f.cookie, f.ids[0]
	p := n.get("/console/deliveries/"+id, cookie)
	for _, s := range []string{`id="attempts"`, "<td>400</td>", "http_400", html.EscapeString("<b>no such order</b>"), "dead_lettered"} {
		if p.status != http.StatusOK || !strings.Contains(p.body, s) {
			t.Fatalf("the delivery's page lacks %q:\n%s", s, p.body)
		}
	}
	if strings.Contains(p.body, "<b>no such order") {
		t.Fatal("the response excerpt is not escaped")
	}
	path := "/console/deliveries/" + id + "/redeliver"
	if r := n.post(path, cookie, nil); r.status != http.StatusForbidden || n.delivery(id).Status != delivery.StatusDeadLettered {
		t.Fatalf("redeliver without the CSRF token: %d, %s; want 403 and nothing changed", r.status, n.delivery(id).Status)
	}
	rivalCookie := n.signIn(ts.rivalKey)
	if r := n.post(path, rivalCookie, url.Values{"csrf": {csrfOf(t, n.signedIn(rivalCookie))}}); r.status != http.StatusNotFound ||
		n.delivery(id).Status != delivery.StatusDeadLettered {
		t.Fatalf("the rival's redeliver: %d; want 404 and nothing changed", r.status)
	}
	rc.cure()
	r := n.post(path, cookie, url.Values{"csrf": {csrfOf(t, p)}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/deliveries/"+id+"?redeliver=done" {
		t.Fatalf("redeliver: %d to %q; want 303 back to the delivery", r.status, r.header.Get("Location"))
	}
	eventually(t, "the redelivery delivered", func() bool { return n.delivery(id).Status == delivery.StatusDelivered })
	if p := n.get(r.header.Get("Location"), cookie); !strings.Contains(p.body, "Redelivered") || !strings.Contains(p.body, "<td>200</td>") {
		t.Fatalf("the page after the redeliver:\n%s", p.body)
	}

	hold := n.subscribe(ts.shopKey, "hold", rc.URL+"/hold")
	n.publish(ts.shopKey, "evt-held")
	select { // its attempt is in progress
	case <-rc.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the held delivery was never attempted")
	}
	held := n.deliveriesOf(hold)[0].ID
	r = n.post("/console/deliveries/"+held+"/redeliver", cookie, url.Values{"csrf": {csrfOf(t, p)}})
	close(rc.release)
	if r.status != http.StatusSeeOther || !strings.HasSuffix(r.header.Get("Location"), "?redeliver=attempting") {
		t.Fatalf("redeliver during an attempt: %d to %q; want 303 back saying why", r.status, r.header.Get("Location"))
	}
	if p := n.get(r.header.Get("Location"), cookie); p.status != http.StatusOK || !strings.Contains(p.body, "an attempt of this delivery is in progress") {
		t.Fatalf("the page after a refused redeliver: %d\n%s", p.status, p.body)
	}
}

// TestRedriveFromThePage: the dead letters page lists the account's dead
// letters with a checkbox each; the redrive form without the CSRF token is
// refused (403) and changes nothing; with it, the two selected are
// redriven (the store shows them delivered), the page says so and lists
// the third only. Another account's key redrives none of them, and a
// form with none selected or a value that is not a delivery ID is a 400
// page.
func TestRedriveFromThePage(t *testing.T) {
	f := newDeadFixture(t, "evt-1", "evt-2", "evt-3")
	n, rc, ts, cookie, dead, ids := f.n, f.rc, f.ts, f.cookie, f.dead, f.ids
	p := n.get("/console/dead-letters?subscription_id="+dead, cookie)
	if got := deliveriesListed(p); !slices.Equal(got, ids) || strings.Count(p.body, `type="checkbox" name="id"`) != 3 {
		t.Fatalf("the dead letters page lists %v; want %v with a checkbox each\n%s", got, ids, p.body)
	}
	form := url.Values{"id": ids[:2], "subscription_id": {dead}}
	stillDead := func(what string) {
		t.Helper()
		for _, id := range ids {
			if st := n.delivery(id).Status; st != delivery.StatusDeadLettered {
				t.Fatalf("%s: %s is %s", what, id, st)
			}
		}
	}
	if r := n.post("/console/dead-letters/redrive", cookie, form); r.status != http.StatusForbidden {
		t.Fatalf("redrive without the CSRF token: %d; want 403", r.status)
	}
	stillDead("after a redrive without the CSRF token")
	rivalCookie := n.signIn(ts.rivalKey)
	rivalForm := url.Values{"id": ids, "csrf": {csrfOf(t, n.signedIn(rivalCookie))}}
	if r := n.post("/console/dead-letters/redrive", rivalCookie, rivalForm); r.status != http.StatusSeeOther ||
		!strings.Contains(r.header.Get("Location"), "redriven=0") {
		t.Fatalf("the rival's redrive: %d to %q; want none redriven", r.status, r.header.Get("Location"))
	}
	stillDead("after the rival's redrive")
	csrf := csrfOf(t, p)
	for _, bad := range []url.Values{{"csrf": {csrf}}, {"csrf": {csrf}, "id": {ids[0], "dlv_' OR 1=1"}}} {
		if r := n.post("/console/dead-letters/redrive", cookie, bad); r.status != http.StatusBadRequest || !strings.Contains(r.body, "nothing changed") {
			t.Fatalf("redrive %v: %d; want a 400 page\n%s", bad, r.status, r.body)
		}
	}
	stillDead("after the refused redrives")

	rc.cure()
	form.Set("csrf", csrf)
	r := n.post("/console/dead-letters/redrive", cookie, form)
	if r.status != http.StatusSeeOther {
		t.Fatalf("redrive: %d; want 303\n%s", r.status, r.body)
	}
	after := n.get(r.header.Get("Location"), cookie)
	if got := deliveriesListed(after); !slices.Equal(got, ids[2:]) || !strings.Contains(after.body, "2 dead letters redriven") {
		t.Fatalf("after the redrive the page lists %v; want %v and the count\n%s", got, ids[2:], after.body)
	}
	for _, id := range ids[:2] {
		eventually(t, id+" delivered", func() bool { return n.delivery(id).Status == delivery.StatusDelivered })
	}
	if st := n.delivery(ids[2]).Status; st != delivery.StatusDeadLettered {
		t.Fatalf("the dead letter not selected is %s", st)
	}
}
