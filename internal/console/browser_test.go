package console_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium with chromedp. Without
// chromium on the PATH they are skipped, except under CI (CI=true), where
// they must run and fail instead (.ci/run installs the package).

// browser is one headless Chromium with a fresh profile, and what its
// pages logged.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	logs []string
}

// newBrowser starts Chromium for the test (closed when it ends), with the
// flags it needs on a machine without a network (no background
// connections, no sandbox as root).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and browser tests must run under CI: apt-get install -y chromium")
		}
		t.Skip("chromium is not installed: browser tests skipped (apt-get install -y chromium runs them)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	b := &browser{ctx: ctx}
	err = chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*log.EventEntryAdded); ok {
			b.mu.Lock()
			b.logs = append(b.logs, string(e.Entry.Source)+": "+e.Entry.Text)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return b
}

// do runs actions, failing the test on an error.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// read runs an action that reads a value, failing the test on an error.
func read[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text returns the text of the first element matching the CSS selector
// sel, once visible.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	b.do(t, "waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	return read(t, b, "reading "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// shot saves the page in the browser as name.png, 1200×800 pixels at
// device scale 1, in the directory HERALD_SCREENSHOTS names (a relative one
// from the repository's root, two levels above this package), for the
// pictures in docs/console.md and docs/portal.md. Without the variable it
// writes nothing.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("HERALD_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	b.do(t, "sizing the window for "+name, chromedp.EmulateViewport(1200, 800))
	png := read(t, b, "shooting "+name, chromedp.CaptureScreenshot())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// signIn fills the sign-in form with key and sends it.
func (b *browser) signIn(t *testing.T, key string) {
	t.Helper()
	b.do(t, "signing in", chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#sign-in")))
}

// cookie returns the browser's session cookie for the node, as a client
// would send it.
func (b *browser) cookie(t *testing.T, n *node) *http.Cookie {
	t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{n.url + "/console/"}})
	if err != nil {
		t.Fatalf("reading cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == "herald_session" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/console/" {
				t.Fatalf("the browser's session cookie: %+v", c)
			}
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatalf("the browser holds no session cookie: %+v", res.Cookies)
	return nil
}

// noPolicyViolations fails the test if a page logged a Content Security
// Policy violation, and unless the console's stylesheet styled the page
// (loaded from /console/static/ under the policy and nosniff).
func (b *browser) noPolicyViolations(t *testing.T) {
	t.Helper()
	bg := read(t, b, "reading the header's style",
		chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header.top")).backgroundColor`))
	if bg != "rgb(29, 35, 43)" {
		t.Fatalf("the header's background is %q: the stylesheet did not apply", bg)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.logs {
		if strings.Contains(l, "Content Security Policy") {
			t.Fatalf("a page broke the Content-Security-Policy: %s", l)
		}
	}
}

// TestBrowserSignInAndOut: in Chromium, a wrong key is refused with a
// message; the admin key signs in to the subscriptions, opens one and sees
// its deliveries; signing out ends the session, whose cookie then opens
// nothing.
func TestBrowserSignInAndOut(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	sub := n.must(http.StatusCreated, adminKey, "POST", "/v1/subscriptions", map[string]any{"name": "orders", "delivery_mode": "pull"})["id"].(string)
	n.must(http.StatusAccepted, adminKey, "POST", "/v1/events",
		map[string]any{"specversion": "1.0", "id": "evt-browser", "source": "/shop", "type": "order.paid"})

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, "hk_not-a-key-herald-made")
	if msg := b.text(t, "#message"); !strings.Contains(msg, "Herald does not know this key") {
		t.Fatalf("after a wrong key the page says %q", msg)
	}
	b.signIn(t, adminKey)
	if list := b.text(t, "#subscriptions"); !strings.Contains(list, "orders") {
		t.Fatalf("the subscriptions list shows %q; want orders", list)
	}
	b.do(t, "opening the subscription", chromedp.Click(chromedp.CSS(`a[href="/console/subscriptions/`+sub+`"]`)))
	if fields := b.text(t, "#fields"); !strings.Contains(fields, sub) || !strings.Contains(fields, "pull") {
		t.Fatalf("the subscription's page shows %q; want its ID and mode", fields)
	}
	if ds := b.text(t, "#deliveries"); !strings.Contains(ds, "evt-browser") || !strings.Contains(ds, "queued") {
		t.Fatalf("the subscription's deliveries show %q; want evt-browser, queued", ds)
	}
	b.noPolicyViolations(t)
	cookie := b.cookie(t, n)
	n.signedIn(cookie)

	b.do(t, "signing out", chromedp.Click(chromedp.CSS("#sign-out")))
	if msg := b.text(t, "#message"); msg != "You have signed out." {
		t.Fatalf("after signing out the page says %q", msg)
	}
	n.signedOut(cookie)
	b.do(t, "opening the list again", chromedp.Navigate(n.url+"/console/subscriptions"), chromedp.WaitVisible(chromedp.CSS("#key")))
}

// TestBrowserOtherAccount: in Chromium, an account key's session opening
// another account's subscription by its URL gets the 404 page, showing
// nothing of it.
func TestBrowserOtherAccount(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	ts := makeTenants(n)
	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, ts.shopKey)
	if list := b.text(t, "#subscriptions"); strings.Contains(list, rivalName) || !strings.Contains(list, "shop-2") {
		t.Fatalf("the shop key's list shows %q", list)
	}
	b.do(t, "opening the rival's subscription", chromedp.Navigate(n.url+"/console/subscriptions/"+ts.rivalSub))
	if h := b.text(t, "h1"); h != "404 Not Found" {
		t.Fatalf("the rival's subscription page's heading is %q; want 404 Not Found", h)
	}
	page := read(t, b, "reading the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(page, rivalName) || strings.Contains(page, rivalURL) {
		t.Fatalf("the 404 page shows the rival's subscription:\n%s", page)
	}
}

// TestBrowserRevokedKey: in Chromium, revoking the key a session signed in
// with ends the session: the next page is the sign-in form saying so.
func TestBrowserRevokedKey(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	_, keyID, key := n.tenant("shop", "account")
	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, key)
	b.text(t, "#no-subscriptions")
	n.must(http.StatusNoContent, adminKey, "DELETE", "/v1/keys/"+keyID, nil)
	b.do(t, "reloading", chromedp.Reload())
	if msg := b.text(t, "#message"); !strings.Contains(msg, "Your session has ended") {
		t.Fatalf("after the key was revoked the page says %q", msg)
	}
}
