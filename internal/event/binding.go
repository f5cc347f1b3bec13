package event

// PercentEncode encodes s as the CloudEvents HTTP binding requires of a
// binary-mode header value (space, double quote, percent and every byte
// outside printable ASCII as %XX, upper-case hex), as the cloudevents-binary
// schema writes ce-* headers; the broker bindings that carry attributes in
// text headers (NATS, internal/broker/natsout) use the same rule.
func PercentEncode(s string) string { return percentEncode(s) }
