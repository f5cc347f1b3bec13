package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestMaskedSASLPasswordStaysWithItsBrokers: a Kafka SASL password is
// never shown (****), and sent back as **** it is kept only for the
// brokers it was given for. A key that may change a subscription's
// destination (or an admin's source) but never read its password cannot
// have Herald send that password to brokers of its choosing: a PATCH that
// names other brokers with sasl.password **** answers 400 naming
// destination.sasl.password (sasl.password for a source) and changes
// nothing; the same brokers keep it, with TLS as it was (TLS taken away
// or checked otherwise takes the password again). A source's PATCH that leaves sasl
// out, naming other brokers, is refused as well.
func TestMaskedSASLPasswordStaysWithItsBrokers(t *testing.T) {
	b := setup(t)
	x := newTenant(b, "x")
	sasl := map[string]any{"mechanism": "PLAIN", "username": "herald", "password": "kafka-s3cret"}
	dest := func(brokers []string, password string) map[string]any {
		s := map[string]any{"mechanism": "PLAIN", "username": "herald", "password": password}
		return map[string]any{"type": "kafka", "brokers": brokers, "topic": "orders", "sasl": s}
	}
	var sub struct{ ID string }
	if code, raw := b.doAs(x.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "k",
		"destination": map[string]any{"type": "kafka", "brokers": []string{"127.0.0.1:9092"}, "topic": "orders", "sasl": sasl}}, &sub); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, raw)
	}
	type shown struct {
		Destination struct {
			Brokers []string
			SASL    struct{ Password string }
		}
	}
	var got shown
	code, raw := b.doAs(x.accountKey, "PATCH", "/v1/subscriptions/"+sub.ID,
		map[string]any{"destination": dest([]string{"127.0.0.1:19092"}, "****")}, nil)
	if code != http.StatusBadRequest || problemField(t, raw) != "destination.sasl.password" {
		t.Errorf("other brokers with the masked password: %d %s, want 400 naming destination.sasl.password", code, raw)
	}
	if code, raw := b.doAs(x.accountKey, "GET", "/v1/subscriptions/"+sub.ID, nil, &got); code != 200 ||
		!slices.Equal(got.Destination.Brokers, []string{"127.0.0.1:9092"}) || got.Destination.SASL.Password != "****" {
		t.Errorf("after the refused PATCH: %d %s, want the brokers unchanged", code, raw)
	}
	if code, raw := b.doAs(x.accountKey, "PATCH", "/v1/subscriptions/"+sub.ID,
		map[string]any{"destination": dest([]string{"127.0.0.1:9092"}, "****"), "name": "k2"}, nil); code != http.StatusOK {
		t.Errorf("the same brokers with the masked password: %d %s, want 200 (kept)", code, raw)
	}
	// The same brokers, but TLS taken away (the password would cross the
	// network in clear) or its certificate checked otherwise: the password again.
	withTLS := dest([]string{"127.0.0.1:9092"}, "kafka-s3cret")
	withTLS["tls"] = true
	if code, raw := b.doAs(x.accountKey, "PATCH", "/v1/subscriptions/"+sub.ID, map[string]any{"destination": withTLS}, nil); code != http.StatusOK {
		t.Fatalf("TLS on, the password given: %d %s", code, raw)
	}
	for what, tls := range map[string]any{"TLS off": false, "another server name": map[string]any{"server_name": "evil.example"}} {
		d := dest([]string{"127.0.0.1:9092"}, "****")
		d["tls"] = tls
		code, raw := b.doAs(x.accountKey, "PATCH", "/v1/subscriptions/"+sub.ID, map[string]any{"destination": d}, nil)
		if code != http.StatusBadRequest || problemField(t, raw) != "destination.sasl.password" {
			t.Errorf("%s with the masked password: %d %s, want 400 naming destination.sasl.password", what, code, raw)
		}
	}

	var src struct{ ID string }
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "kafka", "brokers": []string{"127.0.0.1:9092"}, "topic": "orders",
		"sasl": sasl, "account_id": x.id}, &src); code != http.StatusCreated {
		t.Fatalf("create source: %d %s", code, raw)
	}
	code, raw = b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"brokers": []string{"127.0.0.1:19092"},
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "herald", "password": "****"}}, nil)
	if code != http.StatusBadRequest || problemField(t, raw) != "sasl.password" {
		t.Errorf("a source's other brokers with the masked password: %d %s, want 400 naming sasl.password", code, raw)
	}
	// A PATCH that leaves sasl out keeps it as sent back as shown: for
	// other brokers, refused too.
	code, raw = b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"brokers": []string{"127.0.0.1:19092"}}, nil)
	if code != http.StatusBadRequest || problemField(t, raw) != "sasl.password" {
		t.Errorf("a source's other brokers, sasl left out: %d %s, want 400 naming sasl.password", code, raw)
	}
	if code, raw := b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"topic": "orders.v2"}, nil); code != http.StatusOK {
		t.Errorf("a source's topic changed, sasl left out: %d %s, want 200 (the password kept)", code, raw)
	}
	var s sourceRes
	if code, raw := b.do("GET", "/v1/sources/"+src.ID, nil, &s); code != 200 || !slices.Equal(s.Brokers, []string{"127.0.0.1:9092"}) {
		t.Errorf("the source after the refused PATCH: %d %s, want its brokers unchanged", code, raw)
	}
}

// problemField is the field a problem+json answer names ("" for none).
func problemField(t *testing.T, raw []byte) string {
	t.Helper()
	var p struct{ Field string }
	_ = json.Unmarshal(raw, &p)
	return p.Field
}

// TestFiltersNameNothingOfAnotherAccount: the lists' filters that name
// another account's objects (a subscription, an event id, a URL, a
// status) show nothing of them, the queued list (pull, with events and
// schema_errors) and the dead letters as well; and the answer to y naming
// x's subscription is the answer to y naming one that does not exist, so
// that no filter tells y that x's object exists. The filter-test of x's
// subscription is y's 404, as for one that does not exist.
func TestFiltersNameNothingOfAnotherAccount(t *testing.T) {
	w := newRouteWorld(t, setup(t))
	b, x, y := w.b, w.x, w.y
	var pull struct{ ID string }
	if code, raw := b.doAs(x.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "x-pull", "delivery_mode": "pull"}, &pull); code != 201 {
		t.Fatalf("create pull: %d %s", code, raw)
	}
	if code, raw := b.doAs(x.pubKey, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "e2", "source": "/x", "type": "t",
		"data": map[string]any{"secret": "x-data"}}, nil); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, raw)
	}
	var mine struct{ Data []map[string]any }
	if code, raw := b.doAs(x.accountKey, "GET", "/v1/deliveries?status=queued&subscription_id="+pull.ID, nil, &mine); code != 200 || len(mine.Data) != 1 {
		t.Fatalf("x's queued list: %d %s", code, raw)
	}
	var dl struct{ URL string }
	b.doAs(x.accountKey, "GET", "/v1/subscriptions/"+w.sub.ID, nil, &dl)
	const missing = "sub_00000000000000000000000000"
	for _, q := range []string{
		"/v1/deliveries?subscription_id=%s", "/v1/deliveries?status=queued&subscription_id=%s",
		"/v1/deliveries?status=dead_lettered&subscription_id=%s", "/v1/dead-letters?subscription_id=%s",
		"/v1/stats?subscription_id=%s",
	} {
		code, raw := b.doAs(y.accountKey, "GET", strings.Replace(q, "%s", pull.ID, 1), nil, nil)
		code2, raw2 := b.doAs(y.accountKey, "GET", strings.Replace(q, "%s", missing, 1), nil, nil)
		if strings.Contains(string(raw), "x-data") || strings.Contains(string(raw), pull.ID) && !strings.Contains(string(raw2), missing) {
			t.Errorf("%s as y with x's subscription: %d %s", q, code, raw)
		}
		if code != code2 || strings.ReplaceAll(string(raw), pull.ID, "<id>") != strings.ReplaceAll(string(raw2), missing, "<id>") {
			t.Errorf("%s as y: x's subscription answers %d %s, a missing one %d %s", q, code, raw, code2, raw2)
		}
	}
	for _, q := range []string{"/v1/deliveries?event_id=e1", "/v1/deliveries?event_id=e2", "/v1/deliveries?status=queued",
		"/v1/deliveries?status=dead_lettered", "/v1/dead-letters", "/v1/deliveries?status=queued&url=" + url.QueryEscape(dl.URL)} {
		var out struct{ Data []map[string]any }
		if code, raw := b.doAs(y.accountKey, "GET", q, nil, &out); code != 200 || len(out.Data) != 0 {
			t.Errorf("%s as y: %d %s, want an empty list", q, code, raw)
		}
	}
	ev := map[string]any{"specversion": "1.0", "id": "t1", "source": "/x", "type": "t"}
	code, raw := b.doAs(y.accountKey, "POST", "/v1/subscriptions/"+pull.ID+"/filter-test", ev, nil)
	code2, raw2 := b.doAs(y.accountKey, "POST", "/v1/subscriptions/"+missing+"/filter-test", ev, nil)
	if code != 404 || code2 != 404 || string(raw) != string(raw2) {
		t.Errorf("y's filter-test of x's subscription: %d %s; of a missing one: %d %s", code, raw, code2, raw2)
	}
}

// TestAccountWithASourceIsNotDeleted: a source publishes into its account;
// deleting that account is refused (409) while the source exists, as
// while it has subscriptions, so that no source goes on publishing into
// an account that is gone. Once the source is deleted, so is the account.
func TestAccountWithASourceIsNotDeleted(t *testing.T) {
	b := setup(t)
	z := newTenant(b, "z")
	var src struct{ ID string }
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": "nats://127.0.0.1:1", "subject": "z",
		"account_id": z.id}, &src); code != http.StatusCreated {
		t.Fatalf("create source: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/accounts/"+z.id, nil, nil); code != http.StatusConflict || !strings.Contains(string(raw), "source") {
		t.Errorf("deleting an account a source publishes into: %d %s, want 409 naming the sources", code, raw)
	}
	if code, raw := b.doAs(z.accountKey, "GET", "/v1/subscriptions", nil, nil); code != http.StatusOK {
		t.Errorf("the account's key after the refused delete: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/sources/"+src.ID, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete source: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/accounts/"+z.id, nil, nil); code != http.StatusNoContent {
		t.Errorf("deleting the account without its source: %d %s", code, raw)
	}
}
