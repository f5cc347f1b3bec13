package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var (
	accountAt = regexp.MustCompile(`^/console/accounts/(acc_[0-9a-z]+)\?done=created$`)
	newSecret = regexp.MustCompile(`id="new-key-secret">([^<]+)<`)
	keyIDIn   = regexp.MustCompile(`href="/console/accounts/[^/]+/keys/(key_[0-9a-z]+)/revoke"`)
)

// createAccount makes an account named name from the accounts page's form
// and returns its ID.
func createAccount(t *testing.T, a actor, name string) string {
	t.Helper()
	p := a.post("/console/accounts", map[string]string{"name": name})
	m := accountAt.FindStringSubmatch(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || m == nil {
		t.Fatalf("creating account %s: %d to %q\n%s", name, p.status, p.header.Get("Location"), p.body)
	}
	return m[1]
}

// TestAccountKeyCannotOpenAccounts: an account key's session gets the 404
// page for every accounts page and form (with its CSRF token too), and no
// Accounts link; nothing is made.
func TestAccountKeyCannotOpenAccounts(t *testing.T) {
	n := setup(t)
	shop, keyID, key := n.tenant("shop", "account")
	before := len(n.must(http.StatusOK, adminKey, "GET", "/v1/accounts", nil)["data"].([]any))
	a := signInAs(n, key)
	if strings.Contains(n.signedIn(a.cookie).body, `href="/console/accounts"`) {
		t.Fatal("an account key's navigation links to the accounts")
	}
	for _, path := range []string{"/console/accounts", "/console/accounts/" + shop, "/console/accounts/" + shop + "/keys/" + keyID + "/revoke"} {
		if p := n.get(path, a.cookie); p.status != http.StatusNotFound {
			t.Fatalf("GET %s with an account key: %d; want 404\n%s", path, p.status, p.body)
		}
	}
	for path, form := range map[string]map[string]string{
		"/console/accounts":                                        {"name": "mine"},
		"/console/accounts/" + shop + "/keys":                      {"role": "account", "name": "more"},
		"/console/accounts/" + shop + "/keys/" + keyID + "/revoke": nil,
	} {
		if p := a.post(path, form); p.status != http.StatusNotFound {
			t.Fatalf("POST %s with an account key: %d; want 404\n%s", path, p.status, p.body)
		}
	}
	if accs := n.must(http.StatusOK, adminKey, "GET", "/v1/accounts", nil)["data"].([]any); len(accs) != before {
		t.Fatalf("the accounts after an account key's forms: %v; want the %d there were", accs, before)
	}
	if ks := n.must(http.StatusOK, adminKey, "GET", "/v1/keys?account_id="+shop, nil)["data"].([]any); len(ks) != 1 {
		t.Fatalf("the shop's keys after its key's forms: %v; want its one", ks)
	}
	n.must(http.StatusOK, key, "GET", "/v1/subscriptions", nil) // its key still works
	if admin := signInAs(n, adminKey); !strings.Contains(n.signedIn(admin.cookie).body, `href="/console/accounts"`) {
		t.Fatal("the admin's navigation does not link to the accounts")
	}
}

// TestKeysFromTheConsole: an admin makes an account and a key on its page;
// the secret is shown once (the account's page then shows the key without
// it) and authenticates against the API. Bad input is named on the form
// and makes nothing; a form without the CSRF token is refused. Revoking
// the key ends its API access and the console session signed in with it.
func TestKeysFromTheConsole(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	if p := admin.post("/console/accounts", map[string]string{"name": ""}); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, `id="problem"><code>name</code>:`) {
		t.Fatalf("an account without a name: %d\n%s", p.status, p.body)
	}
	acc := createAccount(t, admin, "shop")
	refused(t, "an account of a name taken", admin.post("/console/accounts", map[string]string{"name": "shop"}), http.StatusConflict, "name", "name")

	keys := "/console/accounts/" + acc + "/keys"
	refused(t, "an admin key outside the default account", admin.post(keys, map[string]string{"role": "admin", "name": "boss"}), http.StatusBadRequest, "role", "role")
	refused(t, "a key of no role", admin.post(keys, map[string]string{"role": "", "name": "x"}), http.StatusBadRequest, "role", "role")
	refused(t, "a key of a role Herald has not", admin.post(keys, map[string]string{"role": "root", "name": "x"}), http.StatusBadRequest, "role", "role")
	if p := n.post(keys, admin.cookie, url.Values{"role": {"account"}, "name": {"x"}}); p.status != http.StatusForbidden {
		t.Fatalf("a key form without the CSRF token: %d; want 403", p.status)
	}
	if ks := n.must(http.StatusOK, adminKey, "GET", "/v1/keys?account_id="+acc, nil)["data"].([]any); len(ks) != 0 {
		t.Fatalf("keys after refused forms: %v; want none", ks)
	}

	made := admin.post(keys, map[string]string{"role": "account", "name": "shop-ops"})
	m := newSecret.FindStringSubmatch(made.body)
	if made.status != http.StatusCreated || m == nil || !strings.Contains(made.body, "shown this once") {
		t.Fatalf("making a key: %d; want 201 showing its secret once\n%s", made.status, made.body)
	}
	secret := html.UnescapeString(m[1])
	if got := n.must(http.StatusOK, secret, "GET", "/v1/subscriptions", nil)["data"].([]any); len(got) != 0 {
		t.Fatalf("the new key's subscriptions: %v", got)
	}
	again := n.get("/console/accounts/"+acc, admin.cookie)
	kid := keyIDIn.FindStringSubmatch(again.body)
	if again.status != http.StatusOK || strings.Contains(again.body, secret) || kid == nil || !strings.Contains(again.body, "shop-ops") {
		t.Fatalf("the account's page after the key was made: %d; want the key listed without its secret\n%s", again.status, again.body)
	}

	session := signInAs(n, secret)
	confirm := "/console/accounts/" + acc + "/keys/" + kid[1] + "/revoke"
	if p := n.get(confirm, admin.cookie); p.status != http.StatusOK || !strings.Contains(p.body, `id="confirm-revoke"`) {
		t.Fatalf("the revoke confirmation: %d\n%s", p.status, p.body)
	}
	n.must(http.StatusOK, secret, "GET", "/v1/subscriptions", nil) // asking revokes nothing
	if p := admin.post(confirm, nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/accounts/"+acc+"?done=revoked" {
		t.Fatalf("revoking: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	n.must(http.StatusUnauthorized, secret, "GET", "/v1/subscriptions", nil)
	n.signedOut(session.cookie)
	if p := n.get("/console/accounts/"+acc+"?done=revoked", admin.cookie); strings.Contains(p.body, kid[1]) || !strings.Contains(p.body, "Key revoked") {
		t.Fatalf("the account's page after revoking still lists the key\n%s", p.body)
	}
}
