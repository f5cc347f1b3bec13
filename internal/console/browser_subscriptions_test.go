package console_test

import (
	"context"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/herald-events/herald/internal/certfile/certtest"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/subscription"
)

// TestBrowserSubscriptionActions: in Chromium, an operator creates a
// subscription pushing to a real receiver on 127.0.0.1 (the test's Herald
// allows private destinations explicitly), sends it a test event and sees
// it delivered, rotates its secret, edits its URL, and deletes it after
// confirming.
func TestBrowserSubscriptionActions(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.do(t, "opening the create form", chromedp.Click(chromedp.CSS("#new-subscription")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
	b.do(t, "filling it in", chromedp.SendKeys(chromedp.CSS("#name"), "orders"), chromedp.SendKeys(chromedp.CSS("#url"), rc.URL+"/ok"),
		chromedp.SendKeys(chromedp.CSS("#event_types"), "order.paid"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Created." {
		t.Fatalf("after creating the page says %q", msg)
	}
	loc := read(t, b, "reading the address", chromedp.Location())
	id := strings.TrimSuffix(strings.TrimPrefix(loc, n.url+"/console/subscriptions/"), "?done=created")
	if got := subOf(n, adminKey, id); got["url"] != rc.URL+"/ok" {
		t.Fatalf("the subscription made from the browser: %v", got)
	}

	b.do(t, "sending a test event", chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#redeliver")))
	dlv := strings.TrimPrefix(read(t, b, "reading the address", chromedp.Location()), n.url+"/console/deliveries/")
	eventually(t, "the test event delivered", func() bool { return n.delivery(dlv).Status == delivery.StatusDelivered })
	b.do(t, "reloading its delivery", chromedp.Reload())
	if st := b.text(t, "#status"); st != "delivered" {
		t.Fatalf("the test event's delivery shows %q", st)
	}

	b.do(t, "back to the subscription", chromedp.Click(chromedp.CSS(`#fields a[href="/console/subscriptions/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#rotate")))
	b.shot(t, "subscription")
	b.do(t, "rotating the secret", chromedp.SendKeys(chromedp.CSS(`input[name="grace"]`), "1h"), chromedp.Click(chromedp.CSS("#rotate")))
	shown := b.text(t, "#new-secret")
	secret := n.must(http.StatusOK, adminKey, "GET", "/v1/subscriptions/"+id+"/secret", nil)
	if shown != secret["secret"] || len(secret["previous"].([]any)) != 1 {
		t.Fatalf("the page shows the secret %q; the API %v", shown, secret)
	}

	b.do(t, "editing the URL", chromedp.Click(chromedp.CSS("#back")), chromedp.Click(chromedp.CSS("#edit")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")),
		chromedp.SetValue(chromedp.CSS("#url"), rc.URL+"/edited"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Saved." {
		t.Fatalf("after editing the page says %q", msg)
	}
	if fields := b.text(t, "#fields"); !strings.Contains(fields, rc.URL+"/edited") || !strings.Contains(fields, "order.paid") {
		t.Fatalf("after editing the URL the fields show %q", fields)
	}

	b.do(t, "deleting it", chromedp.Click(chromedp.CSS("#delete")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
	subOf(n, adminKey, id) // asking deletes nothing
	b.do(t, "confirming", chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS("#no-subscriptions")))
	n.must(http.StatusNotFound, adminKey, "GET", "/v1/subscriptions/"+id, nil)
	b.noPolicyViolations(t)
}

// The secrets TestBrowserSubscriptionAuth sets, to look for in the pages.
const (
	oauthSecret  = "oauth-client-secret-7f3a9c"
	headerSecret = "secret-header-value-51d0e2"
)

// TestBrowserSubscriptionAuth: in Chromium, a subscription's page shows
// its endpoint authentication (OAuth2 client credentials; an mTLS
// certificate) and its dynamic headers, every secret as ****: neither the
// client secret, nor the private key, nor a secret header's value is
// anywhere in the page's or its edit form's HTML. Saving the edit form
// (a new URL; a header more) keeps the auth, its secrets and the dynamic
// headers as they were, in the store.
func TestBrowserSubscriptionAuth(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	pair := certtest.New(t, "herald-client")
	keyBody := strings.Split(string(pair.KeyPEM), "\n")[1]
	dyn := map[string]any{"X-Tenant": "data.tenant.id"}
	oauthID := n.must(http.StatusCreated, adminKey, "POST", "/v1/subscriptions", map[string]any{
		"name": "gateway", "url": "http://127.0.0.1:9/hook", "dynamic_headers": dyn,
		"secret_headers": map[string]any{"X-Key": headerSecret},
		"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": "http://127.0.0.1:9/token",
			"client_id": "herald-client", "client_secret": oauthSecret, "scopes": []string{"hooks.write", "hooks.read"}, "audience": "https://api.example.com"}})["id"].(string)
	mtlsID := n.must(http.StatusCreated, adminKey, "POST", "/v1/subscriptions", map[string]any{
		"name": "mutual", "url": "https://127.0.0.1:9/hook", "dynamic_headers": dyn,
		"auth": map[string]any{"type": "mtls", "certificate": string(pair.CertPEM), "private_key": string(pair.KeyPEM)}})["id"].(string)
	before := map[string]subscription.Subscription{oauthID: storedSub(t, n, oauthID), mtlsID: storedSub(t, n, mtlsID)}

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.text(t, "#subscriptions")
	for _, c := range []struct{ id, auth string }{
		{oauthID, "oauth2_client_credentials: token URL http://127.0.0.1:9/token, client ID herald-client, client secret ****, scopes hooks.write hooks.read, audience https://api.example.com"},
		{mtlsID, "mtls: client certificate CN=herald-client (expires " + pair.Cert.NotAfter.UTC().Format("Jan 2 15:04:05") + "), private key ****"},
	} {
		b.do(t, "opening "+c.id, chromedp.Navigate(n.url+"/console/subscriptions/"+c.id))
		if got := b.text(t, "#auth"); got != c.auth {
			t.Errorf("%s's auth shows %q; want %q", c.id, got, c.auth)
		}
		if got := strings.TrimSpace(b.text(t, "#dynamic-headers")); got != "X-Tenant: data.tenant.id (from the event)" {
			t.Errorf("%s's dynamic headers show %q", c.id, got)
		}
		noSecrets(t, c.id+"'s page", read(t, b, "reading the page", chromedp.OuterHTML(chromedp.CSS("html"))), keyBody)
		b.do(t, "editing "+c.id, chromedp.Click(chromedp.CSS("#edit")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
		noSecrets(t, c.id+"'s edit form", read(t, b, "reading the form", chromedp.OuterHTML(chromedp.CSS("html"))), keyBody)
		b.do(t, "saving "+c.id, chromedp.SetValue(chromedp.CSS("#url"), "http://127.0.0.1:9/edited"),
			chromedp.SetValue(chromedp.CSS("#headers"), "X-Team: payments"), chromedp.Click(chromedp.CSS("#save")))
		if msg := b.text(t, "#message"); msg != "Saved." {
			t.Fatalf("after saving %s the page says %q", c.id, msg)
		}
		after := storedSub(t, n, c.id)
		if after.URL != "http://127.0.0.1:9/edited" || after.Headers["X-Team"] != "payments" {
			t.Fatalf("the edit of %s was not saved: %+v", c.id, after)
		}
		if w := before[c.id]; !reflect.DeepEqual(after.Delivery.Auth, w.Delivery.Auth) ||
			!maps.Equal(after.Delivery.DynamicHeaders, w.Delivery.DynamicHeaders) || !maps.Equal(after.SecretHeaders, w.SecretHeaders) {
			t.Fatalf("saving the form changed %s's auth or headers: %+v %v %v; want %+v %v %v", c.id, after.Delivery.Auth,
				after.Delivery.DynamicHeaders, after.SecretHeaders, w.Delivery.Auth, w.Delivery.DynamicHeaders, w.SecretHeaders)
		}
	}
	if a := before[oauthID].Delivery.Auth; a == nil || a.ClientSecret != oauthSecret {
		t.Fatalf("the store holds the auth %+v", a) // the comparisons above compared the secret
	}
	b.noPolicyViolations(t)
}

// storedSub reads the subscription id from the node's store, secrets and
// all.
func storedSub(t *testing.T, n *node, id string) subscription.Subscription {
	t.Helper()
	s, err := n.srv.Store.GetSubscription(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noSecrets fails the test if html holds the client secret, the secret
// header's value or keyBody (a line of the private key's PEM).
func noSecrets(t *testing.T, what, html, keyBody string) {
	t.Helper()
	for _, s := range []string{oauthSecret, headerSecret, keyBody} {
		if strings.Contains(html, s) {
			t.Fatalf("%s holds the secret %q:\n%s", what, s, html)
		}
	}
}
