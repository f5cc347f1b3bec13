package api

import (
	"cmp"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/subscription"
)

// destinationJSON is a push subscription's destination as the API shows it
// (docs/destinations.md): {"type": "webhook", "url"} for a webhook, or the
// broker's members of its type with mode (tls an object, or null for a
// Kafka destination without TLS; for another type only when set); its
// URL's password as xxxxx and SASL password as ****. nil for a pull
// subscription.
func destinationJSON(s subscription.Subscription) map[string]any {
	if s.DeliveryMode == subscription.ModePull {
		return nil
	}
	d := subscription.MaskedDestination(s.Delivery.Destination)
	if d == nil {
		return map[string]any{"type": broker.TypeWebhook, "url": redact.URL(s.URL)}
	}
	out := map[string]any{"type": d.Type, "mode": cmp.Or(d.Mode, broker.ModeBinary)}
	if d.TLS != nil || d.Type == broker.TypeKafka {
		out["tls"] = d.TLS
	}
	switch d.Type {
	case broker.TypeNATS:
		out["url"], out["subject"], out["jetstream"] = d.URL, d.Subject, d.JetStream
	case broker.TypeAMQP:
		out["url"], out["exchange"], out["routing_key"] = d.URL, d.Exchange, d.RoutingKey
	case broker.TypeMQTT:
		out["url"], out["topic"], out["qos"] = d.URL, d.Topic, d.QoS
	case broker.TypeKafka:
		out["brokers"], out["topic"], out["sasl"] = d.Brokers, d.Topic, d.SASL
	}
	return out
}
