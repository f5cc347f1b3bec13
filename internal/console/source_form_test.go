package console_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The source forms' tests: each form is checked as the API checks its
// request (the same errors, named by field), keeps what was typed but the
// passwords, and never shows a secret.

var sourceCreatedAt = regexp.MustCompile(`^/console/sources/(src_[0-9a-z]+)\?done=created$`)

// createSource sends the create form and returns the new source's id,
// failing the test unless it is made.
func (a actor) createSource(fields map[string]string) string {
	a.n.t.Helper()
	p := a.post("/console/sources/new", fields)
	m := sourceCreatedAt.FindStringSubmatch(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || m == nil {
		a.n.t.Fatalf("create: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	return m[1]
}

// sameAsAPI fails the test unless the form's page p is refused with the
// API's answer to body (POST /v1/sources when id is "", else PATCH
// /v1/sources/{id}): its status, and its detail naming its field, beside
// the input (its name input) marked invalid; and unless it shows no
// secret.
func sameAsAPI(t *testing.T, n *node, what string, p page, id string, body map[string]any, input string) {
	t.Helper()
	method, path := "POST", "/v1/sources"
	if id != "" {
		method, path = "PATCH", "/v1/sources/"+id
	}
	status, prob := n.api(adminKey, method, path, body)
	field, _ := prob["field"].(string)
	detail, _ := prob["detail"].(string)
	refused(t, what, p, status, field, input)
	if !strings.Contains(p.body, html.EscapeString(detail)) {
		t.Fatalf("%s: the form does not say the API's %q\n%s", what, detail, p.body)
	}
	noSourceSecrets(t, what, p)
}

// natsFields are the form's fields of a raw NATS source named orders.
func natsFields() map[string]string {
	return map[string]string{"type": "nats", "account_id": "acc_default", "name": "orders", "url": deadURL, "subject": "orders.>",
		"format": "raw", "wrap.type": "order.placed", "wrap.source": "/shop"}
}

// TestSourceCreateForm: the create form makes the source the API would
// make of the same fields; a refused one comes back with what was typed
// (the URL's password masked), the API's error beside its field, and
// nothing made; a name in use is refused as the API refuses it.
func TestSourceCreateForm(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	if p := n.get("/console/sources/new", admin.cookie); p.status != http.StatusOK || !strings.Contains(p.body, `<option value="kafka">`) ||
		!strings.Contains(p.body, `name="sasl.password" value=""`) {
		t.Fatalf("the create form: %d\n%s", p.status, p.body)
	}
	noSubject := natsFields()
	delete(noSubject, "subject")
	p := admin.post("/console/sources/new", noSubject)
	sameAsAPI(t, n, "a create without a subject", p, "", map[string]any{"type": "nats", "name": "orders", "url": deadURL,
		"format": "raw", "wrap": map[string]any{"type": "order.placed", "source": "/shop"}}, "subject")
	if !strings.Contains(p.body, `value="orders"`) || !strings.Contains(p.body, `value="nats://alice:xxxxx@127.0.0.1:1"`) ||
		!strings.Contains(p.body, `value="/shop"`) || !strings.Contains(p.body, "type it again") {
		t.Fatalf("the refused form does not hold what was typed:\n%s", p.body)
	}
	withBrokers := natsFields()
	withBrokers["brokers"] = "127.0.0.1:9092"
	p = admin.post("/console/sources/new", withBrokers)
	sameAsAPI(t, n, "a NATS create with brokers", p, "", map[string]any{"type": "nats", "url": deadURL, "subject": "orders.>",
		"brokers": []string{"127.0.0.1:9092"}}, "brokers")
	if sourceCount(n) != 0 {
		t.Fatalf("refused forms made %d sources", sourceCount(n))
	}

	id := admin.createSource(natsFields())
	got := sourceAPI(n, id)
	if got["name"] != "orders" || got["type"] != "nats" || got["url"] != "nats://alice:xxxxx@127.0.0.1:1" || got["subject"] != "orders.>" ||
		got["format"] != "raw" || got["wrap"].(map[string]any)["type"] != "order.placed" || got["account_id"] != "acc_default" {
		t.Fatalf("the source made: %v", got)
	}
	if s := storedSource(n, id); s.Config.Conn.URL != deadURL {
		t.Fatalf("the stored URL is %q; want %q", s.Config.Conn.URL, deadURL)
	}
	if p := n.get("/console/sources/"+id+"?done=created", admin.cookie); !strings.Contains(p.body, "Source created") {
		t.Fatalf("the new source's page:\n%s", p.body)
	} else {
		noSourceSecrets(t, "the new source's page", p)
	}
	p = admin.post("/console/sources/new", natsFields())
	sameAsAPI(t, n, "a create with a name in use", p, "", map[string]any{"type": "nats", "name": "orders", "url": deadURL,
		"subject": "x"}, "name")
	if sourceCount(n) != 1 {
		t.Fatalf("%d sources after a name in use; want 1", sourceCount(n))
	}
}

// TestSourceEditForm: the edit form shows the source's settings (the
// URL's password masked); saved as it came it says nothing changed and
// writes nothing; a bad value is refused as PATCH refuses it and changes
// nothing; a change changes that field alone and keeps the URL's
// password; emptying wrap is refused while the format is raw, and with
// cloudevents removes it.
func TestSourceEditForm(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	id := admin.createSource(natsFields())
	edit := "/console/sources/" + id + "/edit"
	p := n.get(edit, admin.cookie)
	noSourceSecrets(t, "the edit form", p)
	if !strings.Contains(p.body, `value="nats://alice:xxxxx@127.0.0.1:1"`) || !strings.Contains(p.body, `value="orders.&gt;"`) {
		t.Fatalf("the edit form:\n%s", p.body)
	}
	shown := natsFields()
	shown["url"] = "nats://alice:xxxxx@127.0.0.1:1"
	n.clk.Advance(time.Second) // a write would move updated_at
	before, rev := sourceJSON(n, id), storedSource(n, id).Revision
	if p := admin.post(edit, shown); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/sources/"+id+"?done=unchanged" {
		t.Fatalf("saving as it came: %d to %q", p.status, p.header.Get("Location"))
	}
	if after := sourceJSON(n, id); after != before || storedSource(n, id).Revision != rev {
		t.Fatalf("saving as it came changed the source:\n%s\n%s", before, after)
	}
	if p := n.get("/console/sources/"+id+"?done=unchanged", admin.cookie); !strings.Contains(p.body, "Nothing changed") {
		t.Fatalf("the page after an unchanged save:\n%s", p.body)
	}

	bad := natsFields()
	bad["url"], bad["subject"] = shown["url"], "orders >"
	p = admin.post(edit, bad)
	sameAsAPI(t, n, "a subject with a space", p, id, map[string]any{"subject": "orders >"}, "subject")
	if !strings.Contains(p.body, `value="orders &gt;"`) || sourceJSON(n, id) != before {
		t.Fatalf("a refused edit: the form or the source:\n%s", p.body)
	}
	noWrap := natsFields()
	noWrap["url"], noWrap["wrap.type"], noWrap["wrap.source"] = shown["url"], "", ""
	refused(t, "emptying wrap of a raw source", admin.post(edit, noWrap), http.StatusBadRequest, "wrap", "wrap.type")
	if sourceJSON(n, id) != before {
		t.Fatal("a refused edit changed the source")
	}
	noWrap["format"] = "cloudevents"
	if p := admin.post(edit, noWrap); p.header.Get("Location") != "/console/sources/"+id+"?done=saved" {
		t.Fatalf("emptying wrap for cloudevents: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if s := storedSource(n, id); s.Config.Wrap != nil || s.Config.Format != "cloudevents" {
		t.Fatalf("after emptying wrap for cloudevents the source is %+v", s.Config)
	}

	changed := natsFields()
	changed["url"], changed["subject"] = shown["url"], "orders.eu.>"
	if p := admin.post(edit, changed); p.header.Get("Location") != "/console/sources/"+id+"?done=saved" {
		t.Fatalf("a change: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if s := storedSource(n, id); s.Config.Subject != "orders.eu.>" || s.Config.Conn.URL != deadURL || s.Name != "orders" {
		t.Fatalf("after the change the source is %+v", s)
	}
}

// TestSourceSASLPassword: a Kafka source's SASL password typed in the
// form is stored and never shown again, on any page; on edit an empty
// password keeps the current one while the user changes, and a typed one
// replaces it; a refused edit does not show the password typed.
func TestSourceSASLPassword(t *testing.T) {
	n := setup(t)
	admin := signInAs(n, adminKey)
	fields := map[string]string{"type": "kafka", "account_id": "acc_default", "name": "clicks", "brokers": "127.0.0.1:1", "topic": "clicks",
		"format": "cloudevents", "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": saslSecret}
	id := admin.createSource(fields)
	at := "/console/sources/" + id
	if s := storedSource(n, id).Config.Conn.SASL; s == nil || s.Password != saslSecret || s.Username != "bob" {
		t.Fatalf("the stored SASL: %+v", s)
	}
	for _, path := range []string{"/console/sources", at, at + "/edit", at + "/delete"} {
		p := n.get(path, admin.cookie)
		noSourceSecrets(t, path, p)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", path, p.status)
		}
	}
	if p := n.get(at+"/edit", admin.cookie); !strings.Contains(p.body, "Leave it empty to keep the current password") {
		t.Fatalf("the edit form does not say an empty password is kept:\n%s", p.body)
	}
	fields["sasl.username"], fields["sasl.password"] = "carol", ""
	if p := admin.post(at+"/edit", fields); p.header.Get("Location") != at+"?done=saved" {
		t.Fatalf("changing the user: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if s := storedSource(n, id).Config.Conn.SASL; s.Password != saslSecret || s.Username != "carol" {
		t.Fatalf("after a change of user with no password typed: %+v", s)
	}
	fields["sasl.password"], fields["brokers"] = saslSecond, "no-port"
	p := admin.post(at+"/edit", fields)
	sameAsAPI(t, n, "a broker without a port", p, id, map[string]any{"brokers": []string{"no-port"}}, "brokers")
	if !strings.Contains(p.body, `brokers[0]: must be host:port`) {
		t.Fatalf("the refused form does not say which broker:\n%s", p.body)
	}
	fields["brokers"] = "127.0.0.1:1"
	if p := admin.post(at+"/edit", fields); p.header.Get("Location") != at+"?done=saved" {
		t.Fatalf("a new password: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if s := storedSource(n, id).Config.Conn.SASL; s.Password != saslSecond {
		t.Fatalf("after a new password: %+v", s)
	}
	if p := n.get(at, admin.cookie); !strings.Contains(p.body, "password <code>****</code>") {
		t.Fatalf("the page does not show the password masked:\n%s", p.body)
	} else {
		noSourceSecrets(t, "the source's page", p)
	}
}
