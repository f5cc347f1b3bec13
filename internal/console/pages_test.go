package console_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// listed returns the IDs of the subscriptions a list page links to, in
// order.
func listed(p page) []string {
	var ids []string
	for _, m := range subscriptionLink.FindAllStringSubmatch(p.body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

var subscriptionLink = regexp.MustCompile(`href="/console/subscriptions/(sub_[0-9a-z]+)"`)

// nextPage returns the list page's link to the next page ("" without one).
func nextPage(p page) string {
	m := regexp.MustCompile(`<a href="([^"]+)" id="next-page"`).FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// tenants is two accounts with an account key each, and their
// subscriptions: shop's two (one named with markup, pushing to a URL with
// a password) and rival's one.
type tenants struct {
	shop, rival       string // account IDs
	shopKey, rivalKey string
	shopSubs          []string // in ID order
	markupSub         string   // the one named with markup
	rivalSub          string
}

const (
	markupName = `<script>alert("x")</script>`
	secretURL  = "https://user:hunter2@shop.example/hook"
	rivalName  = "rival-orders"
	rivalURL   = "https://rival.example/secret-hook"
)

func makeTenants(n *node) tenants {
	n.t.Helper()
	var ts tenants
	ts.shop, _, ts.shopKey = n.tenant("shop", "account")
	ts.rival, _, ts.rivalKey = n.tenant("rival", "account")
	ts.markupSub = n.subscribe(ts.shopKey, markupName, secretURL)
	ts.shopSubs = []string{ts.markupSub, n.subscribe(ts.shopKey, "shop-2", "https://shop.example/2")}
	slices.Sort(ts.shopSubs) // the lists' order; IDs made in one millisecond are in random order
	ts.rivalSub = n.subscribe(ts.rivalKey, rivalName, rivalURL)
	return ts
}

// showsNothingOf fails the test if the page shows any of the rival's
// subscription: its name, its URL, a link to it. (A 404 page may quote
// the ID the request's path named.)
func showsNothingOf(t *testing.T, what string, p page, ts tenants) {
	t.Helper()
	for _, s := range []string{rivalName, rivalURL, `href="/console/subscriptions/` + ts.rivalSub + `"`} {
		if strings.Contains(p.body, s) {
			t.Fatalf("%s shows %q of another account:\n%s", what, s, p.body)
		}
	}
}

// TestAccountKeySeesItsAccountOnly: an account key's list holds its own
// subscriptions only, and no URL parameter reaches another account's: a
// subscription page of another account, or a list naming another
// account, is a 404 showing nothing of it.
func TestAccountKeySeesItsAccountOnly(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	cookie := n.signIn(ts.shopKey)
	list := n.signedIn(cookie)
	if got := listed(list); !slices.Equal(got, ts.shopSubs) {
		t.Fatalf("the shop key's list: %v; want %v", got, ts.shopSubs)
	}
	showsNothingOf(t, "the shop key's list", list, ts)
	if strings.Contains(list.body, `id="account_id"`) {
		t.Fatal("an account key is offered an account picker")
	}
	for _, path := range []string{
		"/console/subscriptions/" + ts.rivalSub,
		"/console/subscriptions?account_id=" + ts.rival,
		"/console/subscriptions?account_id=acc_default",
		"/console/subscriptions?account_id=" + ts.rival + "&cursor=" + ts.rivalSub,
		"/console/subscriptions/sub_00000000000000000000000000",
	} {
		p := n.get(path, cookie)
		if p.status != http.StatusNotFound || !strings.Contains(p.body, "404 Not Found") {
			t.Fatalf("%s with the shop key: %d; want the 404 page\n%s", path, p.status, p.body)
		}
		showsNothingOf(t, path, p, ts)
	}
	if got := listed(n.get("/console/subscriptions?account_id="+ts.shop, cookie)); !slices.Equal(got, ts.shopSubs) {
		t.Fatalf("the shop key's list naming its own account: %v; want %v", got, ts.shopSubs)
	}
	// A cursor past the rival's subscription lists the shop's after it, never the rival's.
	showsNothingOf(t, "a list from a cursor", n.get("/console/subscriptions?cursor="+ts.shopSubs[0], cookie), ts)
}

// TestAdminPicksAccount: an admin key lists every account's subscriptions
// with their account, picks one account with the picker (404 for one
// that does not exist), and opens any subscription.
func TestAdminPicksAccount(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	cookie := n.signIn(adminKey)
	all := n.signedIn(cookie)
	if got, want := listed(all), slices.Sorted(slices.Values(append(slices.Clone(ts.shopSubs), ts.rivalSub))); !slices.Equal(got, want) {
		t.Fatalf("the admin's list: %v; want %v", got, want)
	}
	for _, s := range []string{`<select id="account_id" name="account_id">`, `<th>Account</th>`,
		`<option value="` + ts.rival + `">rival (` + ts.rival + `)</option>`, "<code>" + ts.rival + "</code>"} {
		if !strings.Contains(all.body, s) {
			t.Fatalf("the admin's list lacks %q:\n%s", s, all.body)
		}
	}
	rival := n.get("/console/subscriptions?account_id="+ts.rival, cookie)
	if got := listed(rival); !slices.Equal(got, []string{ts.rivalSub}) || !strings.Contains(rival.body, `<option value="`+ts.rival+`" selected>`) {
		t.Fatalf("the admin's list of rival: %v; want [%s] with rival selected", got, ts.rivalSub)
	}
	if p := n.get("/console/subscriptions?account_id=acc_00000000000000000000000000", cookie); p.status != http.StatusNotFound {
		t.Fatalf("the admin's list of an account that does not exist: %d; want 404", p.status)
	}
	if p := n.get("/console/subscriptions/"+ts.rivalSub, cookie); p.status != http.StatusOK || !strings.Contains(p.body, rivalURL) {
		t.Fatalf("the admin opening rival's subscription: %d\n%s", p.status, p.body)
	}
}

// TestSubscriptionPage: a subscription's page shows its fields, its URL
// without the password, everything escaped, and its deliveries, newest
// first.
func TestSubscriptionPage(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	n.must(http.StatusAccepted, ts.shopKey, "POST", "/v1/events",
		map[string]any{"specversion": "1.0", "id": "evt-1", "source": "/shop", "type": "order.paid"})
	n.clk.Advance(time.Millisecond) // evt-2's delivery is the newer
	n.must(http.StatusAccepted, ts.shopKey, "POST", "/v1/events",
		map[string]any{"specversion": "1.0", "id": "evt-2", "source": "/shop", "type": "order.paid"})
	cookie := n.signIn(ts.shopKey)
	p := n.get("/console/subscriptions/"+ts.markupSub, cookie)
	if p.status != http.StatusOK {
		t.Fatalf("the subscription's page: %d\n%s", p.status, p.body)
	}
	if strings.Contains(p.body, markupName) || strings.Contains(p.body, "hunter2") {
		t.Fatalf("the page shows the name unescaped or the URL's password:\n%s", p.body)
	}
	for _, s := range []string{html.EscapeString(markupName), "https://user:xxxxx@shop.example/hook", ts.markupSub, ts.shop,
		`<span class="state state-active">active</span>`, "<dd>push</dd>", "evt-1", "evt-2"} {
		if !strings.Contains(p.body, s) {
			t.Fatalf("the subscription's page lacks %q:\n%s", s, p.body)
		}
	}
	if strings.Index(p.body, "evt-2") > strings.Index(p.body, "evt-1") {
		t.Fatal("the deliveries are not newest first")
	}
	if list := n.get("/console/subscriptions", cookie); strings.Contains(list.body, markupName) || strings.Contains(list.body, "hunter2") {
		t.Fatalf("the list shows the name unescaped or the URL's password:\n%s", list.body)
	}
}

// TestSubscriptionsPaged: the list shows 50 subscriptions a page, in ID
// order, with a link to the next page; a cursor the list did not give is
// a 400 page.
func TestSubscriptionsPaged(t *testing.T) {
	n := setup(t)
	var want []string
	for i := range 53 {
		want = append(want, n.subscribe(adminKey, fmt.Sprintf("s%02d", i), "https://example.com/hook"))
	}
	slices.Sort(want)
	cookie := n.signIn(adminKey)
	first := n.signedIn(cookie)
	next := nextPage(first)
	if got := listed(first); !slices.Equal(got, want[:50]) || next == "" {
		t.Fatalf("the first page: %d subscriptions, next %q; want the first 50 and a next page", len(got), next)
	}
	second := n.get(next, cookie)
	if got := listed(second); !slices.Equal(got, want[50:]) || nextPage(second) != "" || !strings.Contains(second.body, "First page") {
		t.Fatalf("the second page: %v, next %q; want the last 3, no next page, a link to the first", got, nextPage(second))
	}
	if p := n.get("/console/subscriptions?cursor=nonsense", cookie); p.status != http.StatusBadRequest || !strings.Contains(p.body, "cursor") {
		t.Fatalf("a made-up cursor: %d; want a 400 page naming the cursor\n%s", p.status, p.body)
	}
}
