package source

import (
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// Input is a source create (POST) or change (PATCH) request, as the API
// decodes it (strictjson.Decode); absent fields are nil (or not Set). In a
// change, tls, sasl and wrap given as null are removed.
type Input struct {
	Name      *string                          `json:"name"`
	Type      *string                          `json:"type"`
	AccountID *string                          `json:"account_id"`
	URL       *string                          `json:"url"`
	Brokers   *[]string                        `json:"brokers"`
	TLS       strictjson.Optional[broker.TLS]  `json:"tls"`
	SASL      strictjson.Optional[broker.SASL] `json:"sasl"`
	Subject   *string                          `json:"subject"`
	Stream    *string                          `json:"stream"`
	Durable   *string                          `json:"durable"`
	Queue     *string                          `json:"queue"`
	Topic     *string                          `json:"topic"`
	Format    *string                          `json:"format"`
	Wrap      strictjson.Optional[Wrap]        `json:"wrap"`
}

// MaxName bounds a source's name, in bytes.
const MaxName = 256

// New checks in as a create request and returns the source it makes, at
// revision 1, in in.AccountID (account.DefaultID when absent; the caller
// checks that it exists). The type is required; format defaults to
// cloudevents.
func (in Input) New(now time.Time) (Source, error) {
	if in.Type == nil {
		return Source{}, strictjson.Errorf("type", "type is required: one of %s", strings.Join(Types, ", "))
	}
	s := Source{ID: ids.New(IDs.Prefix, now), Type: *in.Type, AccountID: account.DefaultID,
		Config: Config{Format: FormatCloudEvents}, CreatedAt: now, Revision: 1, Status: Status{Lag: -1}}
	if in.AccountID != nil {
		if !ids.Account.Fits(*in.AccountID) && *in.AccountID != account.DefaultID {
			return Source{}, strictjson.Errorf("account_id", "must be an account id (%s…; GET /v1/accounts lists them)", ids.Account.Prefix)
		}
		s.AccountID = *in.AccountID
	}
	in.Type, in.AccountID = nil, nil
	if err := in.Apply(&s, now); err != nil {
		return Source{}, err
	}
	s.Revision = 1
	return s, nil
}

// Apply checks in as a change of s and applies it: the fields given
// replace s's, and the result is checked whole (Check). A source's type
// and account never change. UpdatedAt becomes now and the revision
// advances.
func (in Input) Apply(s *Source, now time.Time) error {
	if in.Type != nil && *in.Type != s.Type {
		return strictjson.Errorf("type", "a source's type never changes: create another source")
	}
	if in.AccountID != nil && *in.AccountID != s.AccountID {
		return strictjson.Errorf("account_id", "a source's account never changes: create another source")
	}
	c := s.Config
	set(&s.Name, in.Name)
	in.applyConn(&c.Conn)
	set(&c.Subject, in.Subject)
	set(&c.Stream, in.Stream)
	set(&c.Durable, in.Durable)
	set(&c.Queue, in.Queue)
	set(&c.Topic, in.Topic)
	set(&c.Format, in.Format)
	c.Wrap = in.Wrap.Or(c.Wrap)
	if err := strictjson.CheckText("name", s.Name, MaxName, false); err != nil {
		return err
	}
	if err := Check(s.Type, c); err != nil {
		return err
	}
	s.Config, s.UpdatedAt = c, now
	s.Revision++
	return nil
}

// applyConn applies the connection settings given to c: a secret sent
// back as Herald shows it keeps the stored one (broker.Settings.Restore:
// for the same address only); a sasl left out is kept as if sent back as
// shown, so that other brokers without a password given answer 400
// naming sasl.password rather than receive the stored one; a tls or sasl
// of null removes it, as a tls of false does.
func (in Input) applyConn(c *broker.Settings) {
	stored := *c
	set(&c.URL, in.URL)
	if in.Brokers != nil {
		c.Brokers = slices.Clone(*in.Brokers)
	}
	c.TLS = in.TLS.Or(c.TLS)
	c.SASL = in.SASL.Or(c.SASL)
	if !in.SASL.Set && c.SASL != nil {
		shown := *c.SASL
		shown.Password = broker.MaskedPassword
		c.SASL = &shown
	}
	c.Restore(stored)
}

func set(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// Check checks a source's config for its type: the connection
// (subscription.CheckSettings: a URL for NATS, AMQP and MQTT, with tls for
// a TLS scheme; brokers and optional tls and sasl for Kafka), what it reads (checkTarget) and its format.
func Check(typ string, c Config) error {
	if !slices.Contains(Types, typ) {
		return strictjson.Errorf("type", "must be one of %s, not %s", strings.Join(Types, ", "), strictjson.Shorten(typ))
	}
	if err := subscription.CheckSettings("", typ, &c.Conn); err != nil {
		return err
	}
	if err := checkTarget(typ, c); err != nil {
		return err
	}
	if err := checkFormat(c.Format, c.Wrap); err != nil {
		return err
	}
	return nil
}

// targets are the fields that say what each type reads: the first is
// required.
var targets = map[string][]string{
	TypeNATS: {"subject", "stream", "durable"}, TypeAMQP: {"queue"}, TypeMQTT: {"topic"}, TypeKafka: {"topic"},
}

// checkTarget checks what the source reads: the subject (and stream and
// durable) of NATS, the queue of AMQP, the topic of MQTT and Kafka; the
// fields of other types are refused.
func checkTarget(typ string, c Config) *strictjson.Error {
	values := map[string]string{"subject": c.Subject, "stream": c.Stream, "durable": c.Durable, "queue": c.Queue, "topic": c.Topic}
	for _, f := range []string{"subject", "stream", "durable", "queue", "topic"} {
		if values[f] != "" && !slices.Contains(targets[typ], f) {
			return strictjson.Errorf(f, "a %s source does not take %s; it takes %s", typ, f, targets[typ][0])
		}
	}
	req := targets[typ][0]
	if err := strictjson.CheckText(req, values[req], 1024, true); err != nil {
		if values[req] == "" {
			return strictjson.Errorf(req, "%s is required for a %s source", req, typ)
		}
		return err
	}
	switch typ {
	case TypeNATS:
		if strings.ContainsAny(c.Subject, " \t") {
			return strictjson.Errorf("subject", "must be a NATS subject (no white space)")
		}
		for _, f := range []string{"stream", "durable"} {
			if v := values[f]; v != "" && (len(v) > 256 || strings.ContainsAny(v, " \t.*>")) {
				return strictjson.Errorf(f, "must be a JetStream name: at most 256 bytes without white space, '.', '*' or '>'")
			}
		}
	case TypeKafka:
		if len(c.Topic) > 249 || strings.Trim(c.Topic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			return strictjson.Errorf("topic", "must be a Kafka topic: at most 249 of a-z, A-Z, 0-9, '.', '_' and '-'")
		}
	case TypeAMQP:
		if len(c.Queue) > 255 {
			return strictjson.Errorf("queue", "must be at most 255 bytes (an AMQP queue name)")
		}
	}
	return nil
}

// checkFormat checks the format and its wrap: required for raw, refused
// for cloudevents.
func checkFormat(format string, w *Wrap) *strictjson.Error {
	switch format {
	case FormatCloudEvents:
		if w != nil {
			return strictjson.Errorf("wrap", "only raw sources take wrap: a cloudevents message carries its own type and source")
		}
		return nil
	case FormatRaw:
	default:
		return strictjson.Errorf("format", "must be %s or %s, not %s", FormatCloudEvents, FormatRaw, strictjson.Shorten(format))
	}
	if w == nil {
		return strictjson.Errorf("wrap", "a raw source needs wrap: {\"type\", \"source\"} of the events its messages become")
	}
	if err := strictjson.CheckText("wrap.type", w.Type, event.MaxTypeLen, true); err != nil {
		return err
	}
	if event.ReservedTypeName(w.Type) {
		return strictjson.Errorf("wrap.type", "types beginning %q are Herald's own events", event.ReservedTypePrefix)
	}
	if err := strictjson.CheckText("wrap.source", w.Source, event.MaxSourceLen, true); err != nil {
		return err
	}
	if event.ReservedSourceName(w.Source) {
		return strictjson.Errorf("wrap.source", "sources under %q are Herald's own events", event.ReservedSource)
	}
	return nil
}
