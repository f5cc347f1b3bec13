package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
)

// sourceRes is the source resource as tests read it.
type sourceRes struct {
	ID, Name, Type, URL, Subject, Format, State string
	AccountID                                   string `json:"account_id"`
	Brokers                                     []string
	SASL                                        *struct{ Mechanism, Username, Password string }
	Wrap                                        *struct{ Type, Source string }
	Lag                                         *int64
	LastError                                   *string   `json:"last_error"`
	UpdatedAt                                   time.Time `json:"updated_at"`
	Counts                                      struct {
		Received, Published, Duplicates int64
		DeadLettered                    int64 `json:"dead_lettered"`
	}
}

// TestSourceResource: the sources' routes (admin keys only): a source
// created, read with its URL's password masked, listed by page, changed
// (a masked URL refused, the type never), paused and resumed, deleted;
// bad fields refused naming them, changing nothing.
func TestSourceResource(t *testing.T) {
	b := setup(t)
	var src sourceRes
	body := map[string]any{"name": "orders", "type": "nats", "url": "nats://herald:s3cret@127.0.0.1:4222", "subject": "orders.>",
		"format": "raw", "wrap": map[string]any{"type": "order.placed", "source": "/shop"}}
	if code, raw := b.do("POST", "/v1/sources", body, &src); code != http.StatusCreated || src.State != "running" ||
		src.URL != "nats://herald:xxxxx@127.0.0.1:4222" || src.AccountID != "acc_default" || src.Lag != nil || src.LastError != nil {
		t.Fatalf("create: %d %s", code, raw)
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID, nil, nil); code != 200 || strings.Contains(string(raw), "s3cret") {
		t.Fatalf("get: %d %s", code, raw)
	}
	kafka := map[string]any{"type": "kafka", "brokers": []string{"127.0.0.1:9092"}, "topic": "orders",
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "u", "password": "pw-secret"}}
	var k sourceRes
	if code, raw := b.do("POST", "/v1/sources", kafka, &k); code != 201 || k.SASL == nil || k.SASL.Password != "****" || k.Format != "cloudevents" {
		t.Fatalf("create kafka: %d %s", code, raw)
	}
	var page struct {
		Data       []sourceRes
		NextCursor string `json:"next_cursor"`
	}
	if code, raw := b.do("GET", "/v1/sources?limit=1", nil, &page); code != 200 || len(page.Data) != 1 || page.NextCursor != page.Data[0].ID {
		t.Fatalf("list: %d %s", code, raw)
	}
	first := page.Data[0].ID
	if code, raw := b.do("GET", "/v1/sources?limit=1&cursor="+first, nil, &page); code != 200 || len(page.Data) != 1 ||
		page.Data[0].ID == first || page.NextCursor != "" {
		t.Fatalf("the second page: %d %s", code, raw)
	}

	for _, c := range []struct {
		what  string
		body  string
		field string
	}{
		{"an unknown field", `{"type": "nats", "url": "nats://127.0.0.1", "subject": "a", "subjekt": "b"}`, "subjekt"},
		{"no type", `{"url": "nats://127.0.0.1", "subject": "a"}`, "type"},
		{"a wrong type", `{"type": "sqs"}`, "type"},
		{"a field of another type", `{"type": "nats", "url": "nats://127.0.0.1", "subject": "a", "queue": "q"}`, "queue"},
		{"brokers for nats", `{"type": "nats", "url": "nats://127.0.0.1", "subject": "a", "brokers": ["h:1"]}`, "brokers"},
		{"a URL of another scheme", `{"type": "amqp", "url": "nats://127.0.0.1", "queue": "q"}`, "url"},
		{"no subject", `{"type": "nats", "url": "nats://127.0.0.1"}`, "subject"},
		{"raw without wrap", `{"type": "mqtt", "url": "mqtt://127.0.0.1", "topic": "t", "format": "raw"}`, "wrap"},
		{"wrap without its source", `{"type": "mqtt", "url": "mqtt://127.0.0.1", "topic": "t", "format": "raw", "wrap": {"type": "x"}}`, "wrap.source"},
		{"a masked URL", `{"type": "nats", "url": "nats://u:xxxxx@127.0.0.1", "subject": "a"}`, "url"},
		{"a bad broker", `{"type": "kafka", "brokers": ["nohost"], "topic": "t"}`, "brokers[0]"},
		{"an unknown account", `{"type": "nats", "url": "nats://127.0.0.1", "subject": "a", "account_id": "acc_00000000000000000000000000"}`, "account_id"},
		{"a reserved wrap type", `{"type": "nats", "url": "nats://127.0.0.1", "subject": "a", "format": "raw", "wrap": {"type": "herald.x", "source": "/s"}}`, "wrap.type"},
	} {
		code, raw := b.do("POST", "/v1/sources", []byte(c.body), nil)
		wantField(t, c.what, code, raw, 400, c.field, "")
	}
	code, raw := b.do("POST", "/v1/sources", body, nil)
	wantField(t, "a second source named orders", code, raw, 409, "name", "")

	var changed sourceRes
	if code, raw := b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"subject": "orders.eu.>", "url": "nats://herald:xxxxx@127.0.0.2:4222"}, nil); code != 400 {
		t.Fatalf("a PATCH with a masked URL not the stored one's: %d %s; want 400 naming url", code, raw)
	}
	if code, raw := b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"subject": "orders.eu.>"}, &changed); code != 200 ||
		changed.Subject != "orders.eu.>" || changed.URL != src.URL {
		t.Fatalf("PATCH subject: %d %s", code, raw)
	}
	code, raw = b.do("PATCH", "/v1/sources/"+src.ID, map[string]any{"type": "amqp"}, nil)
	wantField(t, "a PATCH of the type", code, raw, 400, "type", "never changes")
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/pause", nil, &changed); code != 200 || changed.State != "paused" {
		t.Fatalf("pause: %d %s", code, raw)
	}
	if code, raw := b.do("POST", "/v1/sources/"+src.ID+"/resume", nil, &changed); code != 200 || changed.State == "paused" {
		t.Fatalf("resume: %d %s", code, raw)
	}

	tn := newTenant(b, "shop")
	code, raw = b.doAs(tn.accountKey, "GET", "/v1/sources", nil, nil)
	wantField(t, "a list with an account key", code, raw, 403, "", "admin")
	if code, raw := b.do("GET", "/v1/sources/src_nope", nil, nil); code != 404 {
		t.Fatalf("GET of a value that is no source id: %d %s", code, raw)
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID+"/dead-letters", nil, &page); code != 200 {
		t.Fatalf("dead letters: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/sources/"+src.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d %s", code, raw)
	}
	if code, raw := b.do("GET", "/v1/sources/"+src.ID, nil, nil); code != 404 {
		t.Fatalf("GET after delete: %d %s", code, raw)
	}
}

// TestSourceDestinationGuard: a broker address the destination policy
// refuses is 422 naming url (or brokers[i]), and nothing is created.
func TestSourceDestinationGuard(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Attempting.Destinations = destination.Policy{} })
	code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": "nats://10.0.0.5:4222", "subject": "a"}, nil)
	wantField(t, "a private broker address", code, raw, 422, "url", "--allow-private-destinations")
	code, raw = b.do("POST", "/v1/sources", map[string]any{"type": "kafka", "brokers": []string{"example.com:9092", "127.0.0.1:9092"}, "topic": "t"}, nil)
	wantField(t, "a loopback broker", code, raw, 422, "brokers[1]", "")
	var page struct{ Data []json.RawMessage }
	if code, raw := b.do("GET", "/v1/sources", nil, &page); code != 200 || len(page.Data) != 0 {
		t.Fatalf("the sources after refusals: %d %s", code, raw)
	}
}

// TestSourcePatchRemovesAndKeeps: a PATCH removes tls, sasl and wrap sent
// as null (a raw source made to read CloudEvents, a Kafka source's SASL
// dropped); a PATCH that leaves the source as it was (nothing, or its own
// values) writes nothing (updated_at stays); a wrap of an unknown member is
// refused naming it, changing nothing.
func TestSourcePatchRemovesAndKeeps(t *testing.T) {
	b := setup(t)
	var raw, k, got sourceRes
	if code, body := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": "nats://127.0.0.1:4222", "subject": "orders.>",
		"format": "raw", "wrap": map[string]any{"type": "order.placed", "source": "/shop"}}, &raw); code != 201 {
		t.Fatalf("create raw: %d %s", code, body)
	}
	code, body := b.do("PATCH", "/v1/sources/"+raw.ID, []byte(`{"wrap": {"type": "x", "source": "/s", "extra": 1}}`), nil)
	wantField(t, "a wrap with an unknown member", code, body, 400, "wrap.extra", "")
	code, body = b.do("PATCH", "/v1/sources/"+raw.ID, []byte(`{"wrap": null}`), nil)
	wantField(t, "a raw source without its wrap", code, body, 400, "wrap", "")
	b.clk.Advance(time.Minute)
	for _, same := range []string{`{}`, `{"subject": "orders.>", "format": "raw"}`, `{"wrap": {"type": "order.placed", "source": "/shop"}}`} {
		if code, body := b.do("PATCH", "/v1/sources/"+raw.ID, []byte(same), &got); code != 200 || !got.UpdatedAt.Equal(raw.UpdatedAt) {
			t.Fatalf("PATCH %s, which changes nothing: %d %s (created %v)", same, code, body, raw.UpdatedAt)
		}
	}
	got = sourceRes{}
	if code, body := b.do("PATCH", "/v1/sources/"+raw.ID, []byte(`{"format": "cloudevents", "wrap": null}`), &got); code != 200 ||
		got.Format != "cloudevents" || got.Wrap != nil || got.UpdatedAt.Equal(raw.UpdatedAt) {
		t.Fatalf("PATCH to cloudevents without wrap: %d %s", code, body)
	}

	if code, body := b.do("POST", "/v1/sources", map[string]any{"type": "kafka", "brokers": []string{"127.0.0.1:9092"}, "topic": "orders",
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "u", "password": "pw"}}, &k); code != 201 || k.SASL == nil {
		t.Fatalf("create kafka: %d %s", code, body)
	}
	got = sourceRes{}
	if code, body := b.do("PATCH", "/v1/sources/"+k.ID, []byte(`{"sasl": null}`), &got); code != 200 || got.SASL != nil {
		t.Fatalf("PATCH sasl null: %d %s", code, body)
	}
	got = sourceRes{}
	if code, body := b.do("GET", "/v1/sources/"+k.ID, nil, &got); code != 200 || got.SASL != nil {
		t.Fatalf("GET after sasl null: %d %s", code, body)
	}
}
