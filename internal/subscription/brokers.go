package subscription

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/strictjson"
)

// Bounds of a broker destination.
const (
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
	TLS        *broker.TLS  `json:"tls"`
	SASL       *broker.SASL `json:"sasl"`
	Mode       *string      `json:"mode"`
}

// fieldsOf names the members each destination type takes besides type
// and mode.
var fieldsOf = map[string][]string{
	broker.TypeWebhook: {"url"},
	broker.TypeNATS:    {"url", "tls", "subject", "jetstream"},
	broker.TypeAMQP:    {"url", "tls", "exchange", "routing_key"},
	broker.TypeMQTT:    {"url", "tls", "topic", "qos"},
	broker.TypeKafka:   {"brokers", "topic", "tls", "sasl"},
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
		d.Topic = deref(di.Topic)
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

// applyAddress checks and sets d's connection settings (broker.Settings:
// a URL for nats, amqp and mqtt, brokers for kafka; tls and sasl), naming
// destination.<field>; a secret sent back as Herald shows it keeps
// stored's.
func (di *destinationInput) applyAddress(d, stored *broker.Destination) *strictjson.Error {
	d.Settings = broker.Settings{URL: deref(di.URL), Brokers: slices.Clone(di.Brokers), TLS: di.TLS, SASL: di.SASL}
	if d.SASL != nil {
		sasl := *d.SASL
		d.SASL = &sasl
	}
	if stored != nil && stored.Type == di.Type {
		d.Restore(stored.Settings)
	}
	return CheckSettings("destination.", d.Type, &d.Settings)
}

// CheckSettings checks the connection settings s of a broker of type typ
// (broker.Settings.Check, then each host's name as a URL's host is
// checked), naming prefix+field.
func CheckSettings(prefix, typ string, s *broker.Settings) *strictjson.Error {
	if err := s.Check(typ); err != nil {
		err.Field = prefix + err.Field
		return err
	}
	for _, e := range s.Endpoints() {
		if msg := checkHost(e.Host); msg != "" {
			return badInput(prefix+e.Field, "%s", msg)
		}
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
		if d.TLS != nil {
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

// CheckSettingsHosts refuses connection settings a host of which g
// refuses (CheckDestination), naming prefix+url or prefix+brokers[i].
// The dials are checked again, each one (destination.Dialer).
func CheckSettingsHosts(ctx context.Context, g destination.Guard, prefix string, s broker.Settings) *DestinationError {
	for _, e := range s.Endpoints() {
		if err := CheckDestination(ctx, g, prefix+e.Field, e.URL); err != nil {
			return err
		}
	}
	return nil
}

// MaskedDestination is d as Herald shows it: its connection settings'
// secrets masked (broker.Settings.Shown).
func MaskedDestination(d *broker.Destination) *broker.Destination {
	if d == nil {
		return nil
	}
	m := *d
	m.Settings = d.Shown()
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
		return CheckSettingsHosts(ctx, g, "destination.", d.Settings)
	}
	return CheckDestination(ctx, g, "url", sub.URL)
}
