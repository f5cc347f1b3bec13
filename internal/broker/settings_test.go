package broker_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/subscription"
)

// TestStoredSettingsDecode: rows written before the destinations and
// sources shared broker.Settings still read: a Kafka destination's
// "tls": true (the subscription's delivery column) is TLS with the
// system's roots, a source's config (the sources table's config column)
// keeps its tls object and SASL; what is written now reads back the same.
func TestStoredSettingsDecode(t *testing.T) {
	var d subscription.DeliveryOptions
	old := `{"destination":{"type":"kafka","brokers":["k1:9092"],"topic":"orders","tls":true,` +
		`"sasl":{"mechanism":"SCRAM-SHA-256","username":"u","password":"p"}}}`
	if err := json.Unmarshal([]byte(old), &d); err != nil {
		t.Fatal(err)
	}
	want := broker.Settings{Brokers: []string{"k1:9092"}, TLS: &broker.TLS{},
		SASL: &broker.SASL{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p"}}
	if dst := d.Destination; dst == nil || !reflect.DeepEqual(dst.Settings, want) || dst.Topic != "orders" || !dst.Secure() {
		t.Fatalf("old destination read as %+v", d.Destination)
	}
	roundTrip(t, &d, func(v *subscription.DeliveryOptions) any { return v.Destination.Settings })

	var c source.Config
	oldSource := `{"conn":{"brokers":["k1:9092"],"tls":{"server_name":"kafka.internal","ca_pem":"PEM"},` +
		`"sasl":{"mechanism":"PLAIN","username":"u","password":"p"}},"topic":"t","format":"cloudevents"}`
	if err := json.Unmarshal([]byte(oldSource), &c); err != nil {
		t.Fatal(err)
	}
	want = broker.Settings{Brokers: []string{"k1:9092"}, TLS: &broker.TLS{ServerName: "kafka.internal", CAPEM: "PEM"},
		SASL: &broker.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}}
	if !reflect.DeepEqual(c.Conn, want) {
		t.Fatalf("old source config read as %+v", c.Conn)
	}
	roundTrip(t, &c, func(v *source.Config) any { return v.Conn })
}

// roundTrip marshals v and reads it back, failing unless part of both is
// the same.
func roundTrip[T any](t *testing.T, v *T, part func(*T) any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var again T
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(part(v), part(&again)) {
		t.Fatalf("%s read back as %+v, want %+v", b, part(&again), part(v))
	}
}
