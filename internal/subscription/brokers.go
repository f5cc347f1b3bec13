package subscription

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/strictjson"
)

// Bounds of a broker destination.
const (
	// maxKafkaBrokers bounds a Kafka destination's seed brokers.
	maxKafkaBrokers = 16
	// maxBrokerName bounds an exchange name, a SASL user name and
	// password, in bytes (AMQP's short string).
	maxBrokerName = 255
)

// destinationInput is the "destination" member as sent (docs/destinations.md):
// the fields of every type, each refused on a type that has none.
type destinationInput struct {
	Type       string       `json:"type"`
	URL        *string      `json:"url"`
	Subject    *string      `json:"subject"`
	JetStream  *bool        `json:"jetstream"`
	Exchange   *string      `json:"exchange"`
	RoutingKey *string      `json:"routing_key"`
	Topic      *string      `json:"topic"`
	QoS        *int         `json:"qos"`
	Brokers    []string     `json:"brokers"`
	TLS        *bool        `json:"tls"`
	SASL       *broker.SASL `json:"sasl"`
	Mode       *string      `json:"mode"`
}

// fieldsOf names the members each destination type takes besides type
// and mode.
var fieldsOf = map[string][]string{
	broker.TypeWebhook: {"url"},
	broker.TypeNATS:    {"url", "subject", "jetstream"},
	broker.TypeAMQP:    {"url", "exchange", "routing_key"},
	broker.TypeMQTT:    {"url", "topic", "qos"},
	broker.TypeKafka:   {"brokers", "topic", "tls", "sasl"},
}

// schemesOf are the URL schemes of each broker type.
var schemesOf = map[string][]string{
	broker.TypeNATS: {"nats", "tls"},
	broker.TypeAMQP: {"amqp", "amqps"},
	broker.TypeMQTT: {"mqtt", "mqtts"},
}

// applyDestination applies the destination member: a webhook's URL (as
// url would), or a broker's, stored whole in the delivery options
// (Delivery.Destination) with the subscription's URL its endpoint key
// (EndpointKey). Its problems name destination.<field>. A URL or SASL
// password sent back as Herald shows it (****) keeps the stored secret.
func (in Input) applyDestination(sub *Subscription) *strictjson.Error {
	if in.Destination == nil {
		return nil
	}
	if in.URL != nil {
		return badInput("url", "give either url or destination, not both")
	}
	var di destinationInput
	if err := strictjson.Decode(in.Destination, "destination", &di); err != nil {
		return err
	}
	fields, ok := fieldsOf[di.Type]
	if !ok {
		return badInput("destination.type", "must be one of webhook, nats, amqp, mqtt or kafka, not %s", strconv.Quote(di.Type))
	}
	if name := di.unexpected(fields); name != "" {
		return badInput("destination."+name, "a %s destination has no %s", di.Type, name)
	}
	if di.Type == broker.TypeWebhook {
		if di.URL == nil {
			return badInput("destination.url", "is required")
		}
		u, err := sentURL("destination.url", *di.URL, webhookURL(sub))
		if err != nil {
			return err
		}
		sub.URL, sub.Delivery.Destination = u, nil
		return nil
	}
	d, err := di.broker(sub.Delivery.Destination)
	if err != nil {
		return err
	}
	sub.URL, sub.Delivery.Destination = EndpointKey(d), d
	return nil
}

// webhookURL is sub's URL when it delivers to a webhook ("" otherwise).
func webhookURL(sub *Subscription) string {
	if sub.Delivery.Destination != nil {
		return ""
	}
	return sub.URL
}

// unexpected names the first member set that a destination with these
// fields does not take ("" for none).
func (di *destinationInput) unexpected(fields []string) string {
	set := []struct {
		name string
		set  bool
	}{
		{"url", di.URL != nil}, {"subject", di.Subject != nil}, {"jetstream", di.JetStream != nil},
		{"exchange", di.Exchange != nil}, {"routing_key", di.RoutingKey != nil}, {"topic", di.Topic != nil},
		{"qos", di.QoS != nil}, {"brokers", di.Brokers != nil}, {"tls", di.TLS != nil}, {"sasl", di.SASL != nil},
	}
	for _, m := range set {
		if m.set && !slices.Contains(fields, m.name) {
			return m.name
		}
	}
	if di.Type == broker.TypeWebhook && di.Mode != nil {
		return "mode"
	}
	return ""
}

// broker checks a broker destination as sent and returns it as stored;
// stored is the destination stored now (nil for none), whose secrets a
// masked value keeps.
func (di *destinationInput) broker(stored *broker.Destination) (*broker.Destination, *strictjson.Error) {
	d := &broker.Destination{Type: di.Type, JetStream: true, QoS: 1}
	if di.Mode != nil {
		switch m := *di.Mode; m {
		case broker.ModeBinary, broker.ModeStructured:
			d.Mode = m
		default:
			return nil, badInput("destination.mode", "must be binary or structured, not %s", strconv.Quote(m))
		}
	}
	if err := di.applyAddress(d, stored); err != nil {
		return nil, err
	}
	switch di.Type {
	case broker.TypeNATS:
		d.Subject = deref(di.Subject)
		if di.JetStream != nil {
			d.JetStream = *di.JetStream
		}
	case broker.TypeAMQP:
		d.Exchange, d.RoutingKey = deref(di.Exchange), deref(di.RoutingKey)
		if err := strictjson.CheckText("destination.exchange", d.Exchange, maxBrokerName, false); err != nil {
			return nil, err
		}
	case broker.TypeMQTT:
		d.Topic = deref(di.Topic)
		if di.QoS != nil {
			if q := *di.QoS; q != 0 && q != 1 {
				return nil, badInput("destination.qos", "must be 0 or 1, not %d", q)
			}
			d.QoS = *di.QoS
		}
	case broker.TypeKafka:
		d.Topic, d.TLS = deref(di.Topic), di.TLS != nil && *di.TLS
	}
	return d, checkTarget(d, di)
}

// checkTarget checks d's subject, routing key or topic template (which
// must be sent, but for AMQP's routing key).
func checkTarget(d *broker.Destination, di *destinationInput) *strictjson.Error {
	field := broker.TargetName(d.Type)
	sent := di.Subject != nil || di.Topic != nil || di.RoutingKey != nil
	if !sent && d.Type != broker.TypeAMQP {
		return badInput("destination."+field, "is required")
	}
	if msg := broker.CheckTemplate(d.Type, d.Template()); msg != "" {
		return badInput("destination."+field, "%s %s", strconv.Quote(strictjson.Shorten(d.Template())), msg)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// applyAddress checks and sets d's broker address: its URL (nats, amqp,
// mqtt) or its brokers, TLS and SASL (kafka).
func (di *destinationInput) applyAddress(d, stored *broker.Destination) *strictjson.Error {
	if di.Type == broker.TypeKafka {
		return di.applyKafka(d, stored)
	}
	if di.URL == nil {
		return badInput("destination.url", "is required")
	}
	raw := *di.URL
	if stored != nil && stored.Type == di.Type && stored.URL != "" && raw == redact.URL(stored.URL) {
		raw = stored.URL // sent back as shown: the stored password stays
	} else if redact.Masked(raw) {
		return badInput("destination.url", "shows %s where a password goes, as Herald shows it: send the URL with its password", redact.Mask)
	}
	if err := checkBrokerURL(raw, schemesOf[di.Type]); err != "" {
		return badInput("destination.url", "%s", err)
	}
	d.URL = raw
	return nil
}

// checkBrokerURL returns why raw is not a broker URL of one of schemes
// ("" when it is): an absolute URL of such a scheme with a valid host, a
// port in range and no fragment.
func checkBrokerURL(raw string, schemes []string) string {
	if len(raw) > maxURLLen {
		return fmt.Sprintf("must be at most %d bytes, got %d", maxURLLen, len(raw))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a URL: " + parseProblem(err)
	case !slices.Contains(schemes, u.Scheme):
		return "must begin with " + strings.Join(schemes, ":// or ") + "://"
	case u.Hostname() == "":
		return "must name a host"
	case u.Fragment != "":
		return "must not have a fragment (#...)"
	}
	return checkHostPort(u.Hostname(), u.Port())
}

// checkHostPort returns why host and port (either may be "") cannot be
// connected to, or "".
func checkHostPort(host, port string) string {
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("the port must be a number from 1 to 65535, got %q", port)
		}
	}
	return checkHost(host)
}

// applyKafka checks and sets a Kafka destination's brokers, TLS and SASL.
func (di *destinationInput) applyKafka(d, stored *broker.Destination) *strictjson.Error {
	if len(di.Brokers) == 0 || len(di.Brokers) > maxKafkaBrokers {
		return badInput("destination.brokers", "must list 1 to %d brokers (host:port), got %d", maxKafkaBrokers, len(di.Brokers))
	}
	for i, b := range di.Brokers {
		field := "destination.brokers[" + strconv.Itoa(i) + "]"
		host, port, err := net.SplitHostPort(b)
		if err != nil || port == "" {
			return badInput(field, "must be host:port, such as kafka-1.example.com:9092")
		}
		if msg := checkHostPort(host, port); msg != "" {
			return badInput(field, "%s", msg)
		}
	}
	d.Brokers = slices.Clone(di.Brokers)
	if s := di.SASL; s != nil {
		sasl := *s
		switch strings.ToUpper(sasl.Mechanism) {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return badInput("destination.sasl.mechanism", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not %s", strconv.Quote(sasl.Mechanism))
		}
		if err := strictjson.CheckText("destination.sasl.username", sasl.Username, maxBrokerName, true); err != nil {
			return err
		}
		if sasl.Password == masked && stored != nil && stored.SASL != nil {
			sasl.Password = stored.SASL.Password
		} else if sasl.Password == masked {
			return badInput("destination.sasl.password", "is %s, as Herald shows a password: send the password", masked)
		}
		if err := strictjson.CheckText("destination.sasl.password", sasl.Password, maxBrokerName, true); err != nil {
			return err
		}
		d.SASL = &sasl
	}
	return nil
}

// EndpointKey is the endpoint (circuit, rate limit, health page) of a
// broker destination, and the subscription's URL: its type as the scheme,
// its broker's address without credentials, and what it publishes to:
//   - nats://HOST:PORT/SUBJECT (tls:// for a TLS URL),
//   - amqp://HOST:PORT/VHOST/EXCHANGE/ROUTING_KEY (amqps:// for TLS; the
//     virtual host path-escaped as in the URL, the default exchange "" as
//     amq.default),
//   - mqtt://HOST:PORT/TOPIC (mqtts:// for TLS),
//   - kafka://BROKER,BROKER/TOPIC (kafkas:// with TLS),
//
// with the templates as written: one subscription's events share its
// circuit whatever subject each resolves to, and subscriptions of an
// account publishing to the same broker and target share one.
func EndpointKey(d *broker.Destination) string {
	if d.Type == broker.TypeKafka {
		scheme := "kafka"
		if d.TLS {
			scheme = "kafkas"
		}
		return scheme + "://" + strings.Join(d.Brokers, ",") + "/" + d.Topic
	}
	u, err := url.Parse(d.URL)
	if err != nil {
		return d.Type + "://invalid"
	}
	base := u.Scheme + "://" + u.Host
	switch d.Type {
	case broker.TypeAMQP:
		vhost := strings.TrimPrefix(u.EscapedPath(), "/")
		exchange := d.Exchange
		if exchange == "" {
			exchange = "amq.default"
		}
		return base + "/" + vhost + "/" + exchange + "/" + d.RoutingKey
	case broker.TypeNATS:
		return base + "/" + d.Subject
	}
	return base + "/" + d.Topic
}

// checkBrokerHosts refuses a broker destination whose hosts (its URL's,
// or each Kafka broker's) g refuses, naming destination.url or
// destination.brokers[i] (see CheckDestination).
func checkBrokerHosts(ctx context.Context, g destination.Guard, d *broker.Destination) *DestinationError {
	if d.Type != broker.TypeKafka {
		return CheckDestination(ctx, g, "destination.url", d.URL)
	}
	for i, b := range d.Brokers {
		if err := CheckDestination(ctx, g, "destination.brokers["+strconv.Itoa(i)+"]", "kafka://"+b); err != nil {
			return err
		}
	}
	return nil
}

// MaskedDestination is d as Herald shows it: its URL's password and its
// SASL password as ****.
func MaskedDestination(d *broker.Destination) *broker.Destination {
	if d == nil {
		return nil
	}
	m := *d
	m.URL = redact.URL(d.URL)
	m.Brokers = slices.Clone(d.Brokers)
	if d.SASL != nil {
		s := *d.SASL
		s.Password = masked
		m.SASL = &s
	}
	return &m
}

// checkBrokerCombination refuses, for a subscription with a broker
// destination, what only an HTTP push has: batches, a validation
// handshake, authentication and HTTP headers.
func checkBrokerCombination(sub *Subscription) *CombinationError {
	if sub.Delivery.Destination == nil {
		return nil
	}
	const why = "a broker destination publishes one event a message, without HTTP"
	switch {
	case sub.Delivery.MaxEventsPerBatch > 1:
		return &CombinationError{Field: "max_events_per_batch", Detail: why + ": no batches"}
	case sub.Delivery.Validation != "":
		return &CombinationError{Field: "validation", Detail: why + ": no validation handshake"}
	case sub.Delivery.Auth != nil:
		return &CombinationError{Field: "auth", Detail: why + ": its credentials go in destination.url or destination.sasl"}
	case len(sub.Headers) > 0 || len(sub.SecretHeaders) > 0 || len(sub.Delivery.DynamicHeaders) > 0:
		return &CombinationError{Field: "headers", Detail: why + ": no HTTP headers"}
	}
	return nil
}

// checkPushDestination checks the hosts of where sub pushes to with g:
// its broker's (checkBrokerHosts) or its URL's.
func checkPushDestination(ctx context.Context, g destination.Guard, sub *Subscription) *DestinationError {
	if d := sub.Delivery.Destination; d != nil {
		return checkBrokerHosts(ctx, g, d)
	}
	return CheckDestination(ctx, g, "url", sub.URL)
}
