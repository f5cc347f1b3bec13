package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestMaskedSASLPasswordStaysWithItsBrokers: a Kafka SASL password is
// never shown (****), and sent back as **** it is kept only for the
// brokers it was given for. A key that may change a subscription's
// destination (or an admin's source) but never read its password cannot
// have Herald send that password to brokers of its choosing: a PATCH that
// names other brokers with sasl.password **** answers 400 naming
// destination.sasl.password (sasl.password for a source) and changes
// nothing; the same brokers keep it. A source's PATCH that leaves sasl
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
