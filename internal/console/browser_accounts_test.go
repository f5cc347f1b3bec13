package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAccountsAndKeys: in Chromium, the admin creates an account
// and a key for it (shown once), signs out, signs in with the new key and
// sees its account's (empty) subscriptions, signs back in as the admin and
// revokes the key after confirming: the key no longer works.
func TestBrowserAccountsAndKeys(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.do(t, "opening the accounts", chromedp.Click(chromedp.CSS(`nav a[href="/console/accounts"]`)), chromedp.WaitVisible(chromedp.CSS("#account-form")))
	b.do(t, "creating an account", chromedp.SendKeys(chromedp.CSS("#name"), "shop"), chromedp.Click(chromedp.CSS("#create-account")))
	if msg := b.text(t, "#message"); !strings.Contains(msg, "Account created") {
		t.Fatalf("after creating the account the page says %q", msg)
	}
	loc := read(t, b, "reading the address", chromedp.Location())
	acc := strings.TrimSuffix(strings.TrimPrefix(loc, n.url+"/console/accounts/"), "?done=created")
	b.do(t, "creating a key", chromedp.SendKeys(chromedp.CSS("#key-name"), "shop-ops"), chromedp.Click(chromedp.CSS("#create-key")))
	secret := b.text(t, "#new-key-secret")
	if warn := b.text(t, "#new-key"); !strings.Contains(warn, "shown this once") {
		t.Fatalf("the new key's notice says %q", warn)
	}
	b.noPolicyViolations(t)

	b.do(t, "signing out", chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#key")))
	b.signIn(t, secret)
	b.text(t, "#no-subscriptions")
	if who := b.text(t, ".who .key"); !strings.Contains(who, "account key") {
		t.Fatalf("signed in with the new key, the header says %q", who)
	}
	nav := read(t, b, "reading the navigation", chromedp.OuterHTML(chromedp.CSS("nav")))
	if strings.Contains(nav, "/console/accounts") {
		t.Fatalf("the account key's navigation links to the accounts: %s", nav)
	}

	b.do(t, "signing out", chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#key")))
	b.signIn(t, adminKey)
	b.do(t, "opening the accounts", chromedp.Click(chromedp.CSS(`nav a[href="/console/accounts"]`)), chromedp.WaitVisible(chromedp.CSS("#accounts")))
	b.do(t, "opening the account", chromedp.Click(chromedp.CSS(`#accounts a[href="/console/accounts/`+acc+`"]`)), chromedp.WaitVisible(chromedp.CSS("#keys")))
	b.do(t, "asking to revoke", chromedp.Click(chromedp.CSS(`#keys a.danger`)), chromedp.WaitVisible(chromedp.CSS("#confirm-revoke")))
	n.must(http.StatusOK, secret, "GET", "/v1/subscriptions", nil) // asking revokes nothing
	b.do(t, "confirming", chromedp.Click(chromedp.CSS("#confirm-revoke")))
	if msg := b.text(t, "#message"); !strings.Contains(msg, "Key revoked") {
		t.Fatalf("after revoking the page says %q", msg)
	}
	b.text(t, "#no-keys")
	n.must(http.StatusUnauthorized, secret, "GET", "/v1/subscriptions", nil)
}
