package event

import (
	"net/http"
	"net/url"
	"strings"
)

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
// they are (AMQP, MQTT and Kafka carry them as they are; for NATS see
// ParseEncodedBinding). Errors are *FieldError naming ce-<attribute>,
// content-type or body.
func ParseBinding(attrs map[string]string, contentType string, body []byte) ([]Event, error) {
	return parseBinding(attrs, contentType, body, percentEncode)
}

// ParseEncodedBinding is ParseBinding for a binding whose attribute values
// are text headers encoded as the HTTP binding's ce- headers are — NATS
// (nats-protocol-binding.md 1.0.3, "NATS Header Values"): a value in
// double quotes is unquoted first (backslash escapes), then percent-decoded
// once, and must then be valid UTF-8 (else a *FieldError naming
// ce-<attribute>, as an HTTP request's). A value that is not valid
// percent-encoding (a "%" not followed by two hex digits: "50% off") is
// taken as it is, since producers that write the values unencoded (the
// CloudEvents Go SDK's NATS binding does) are common and such a value
// cannot have been encoded.
func ParseEncodedBinding(attrs map[string]string, contentType string, body []byte) ([]Event, error) {
	return parseBinding(attrs, contentType, body, lenientHeader)
}

// lenientHeader is v unquoted, as an HTTP binding's header value: as it
// is when it decodes, else percent-encoded (so that it decodes to itself).
func lenientHeader(v string) string {
	v = unquote(v)
	if _, err := url.PathUnescape(v); err != nil {
		return percentEncode(v)
	}
	return v
}

// parseBinding reads attrs, each value made an HTTP binding's header
// value by header.
func parseBinding(attrs map[string]string, contentType string, body []byte, header func(string) string) ([]Event, error) {
	h := make(http.Header, len(attrs)+1)
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	for name, v := range attrs {
		h.Set("Ce-"+name, header(v))
	}
	return ParseWith(h, body, ParseOptions{})
}

// unquote is v without its double quotes and backslash escapes when it is
// an RFC 7230 quoted-string, else v.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
