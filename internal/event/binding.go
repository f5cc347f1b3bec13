package event

import "net/http"

// PercentEncode encodes s as the CloudEvents HTTP binding requires of a
// binary-mode header value (space, double quote, percent and every byte
// outside printable ASCII as %XX, upper-case hex), as the cloudevents-binary
// schema writes ce-* headers; the broker bindings that carry attributes in
// text headers (NATS, internal/broker/natsout) use the same rule.
func PercentEncode(s string) string { return percentEncode(s) }

// ParseBinding reads the events of one message of a broker's CloudEvents
// protocol binding (NATS, AMQP, MQTT, Kafka), as Parse reads a request of
// the HTTP binding: attrs are the message's binary-mode attributes by name
// (the binding's prefix removed: "id", "source", "specversion", …) and
// contentType its content type. A content type of
// application/cloudevents+json (or the batch's) is structured mode, and
// attrs are ignored; otherwise the attributes must hold specversion
// (binary mode) and the body is the data. Attribute values are taken as
// they are (the HTTP binding's percent-encoding is not the brokers').
// Errors are *FieldError naming ce-<attribute>, content-type or body.
func ParseBinding(attrs map[string]string, contentType string, body []byte) ([]Event, error) {
	h := make(http.Header, len(attrs)+1)
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	for name, v := range attrs {
		h.Set("Ce-"+name, percentEncode(v))
	}
	return ParseWith(h, body, ParseOptions{})
}
