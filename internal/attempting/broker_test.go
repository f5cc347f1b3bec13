package attempting

import (
	"encoding/json"
	"testing"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/event"
)

// TestBrokerMessage: a stored event becomes a broker message as the
// subscription's schema and the destination's mode say: binary mode has
// the attributes apart with their values as the event has them (not
// percent-encoded), the data as body and the datacontenttype; structured
// mode the stored event itself; the data schema the data alone; the
// template fields come from the event; the ordering key is the key.
func TestBrokerMessage(t *testing.T) {
	payload := []byte(`{"specversion":"1.0","id":"e 1","source":"/shop","type":"order.created","subject":"o/7","datacontenttype":"application/json","tenant":"Zoë","data":{"n":1}}`)
	it := event.Item{Payload: payload, DeliveryID: "dlv_1", Attempt: 1}
	d := &broker.Destination{Type: broker.TypeNATS, Subject: "orders.{type}"}

	m, err := brokerMessage(event.SchemaCloudEvents, d, it, "k1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range m.Attributes {
		got[a[0]] = a[1]
	}
	if got["id"] != "e 1" || got["tenant"] != "Zoë" || got["type"] != "order.created" || got["datacontenttype"] != "" ||
		m.ContentType != "application/json" || string(m.Body) != `{"n":1}` || m.Key != "k1" ||
		m.Fields != (broker.Fields{Type: "order.created", Subject: "o/7", Source: "/shop"}) {
		t.Fatalf("binary: %+v %v", m, got)
	}

	d.Mode = broker.ModeStructured
	m, err = brokerMessage(event.SchemaCloudEventsBinary, d, it, "")
	if err != nil || m.Attributes != nil || m.ContentType != "application/cloudevents+json" || !json.Valid(m.Body) || string(m.Body) != string(payload) {
		t.Fatalf("structured: %+v, %v", m, err)
	}

	m, err = brokerMessage(event.SchemaData, &broker.Destination{Type: broker.TypeKafka, Topic: "orders"}, it, "")
	if err != nil || m.Attributes != nil || string(m.Body) != `{"n":1}` || m.Fields != (broker.Fields{}) {
		t.Fatalf("data schema, a template without placeholders: %+v, %v", m, err)
	}
}
