package broker

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxTarget bounds a resolved subject, routing key or topic in bytes:
// AMQP's short string limit (255), which also holds Kafka's 249-byte topic
// names (checked apart).
const MaxTarget = 255

// maxKafkaTopic is Kafka's limit on a topic name's length.
const maxKafkaTopic = 249

// Placeholders a template may hold, each replaced by the event's attribute
// (an absent subject is "").
var placeholders = []string{"{type}", "{subject}", "{source}"}

// Reserved are the target prefixes each broker keeps for itself or its
// clients' replies: NATS's $ subjects (the JetStream API $JS.API.>, $KV,
// $SYS, …) and _INBOX. (request-reply answers), MQTT's $ topics ($SYS/…),
// RabbitMQ's amq. names (server-named and direct reply-to queues, which
// the default exchange routes to by routing key), Kafka's __ internal
// topics. Only a template's own text may begin a target with one: an
// event's attribute that does is refused (Resolve).
var Reserved = map[string][]string{
	TypeNATS:  {"$", "_INBOX."},
	TypeAMQP:  {"amq."},
	TypeMQTT:  {"$"},
	TypeKafka: {"__"},
}

// Resolve is the target a template gives for an event of these fields
// (Expand), checked for the destination's type (Check, then
// checkResolved: no Reserved prefix and no empty routing key that the
// event's attributes, not the template's text, put there). A result that
// fails is an OutcomeRefused error wrapping a *TargetError: the event
// cannot be published there, and retrying will not change it
// (InvalidTarget); nothing is sent.
func Resolve(typ, template string, f Fields) (string, error) {
	s := Expand(template, f)
	msg := Check(typ, s)
	if msg == "" {
		msg = checkResolved(typ, template, s)
	}
	if msg != "" {
		return "", Refused(&TargetError{Field: TargetName(typ), Template: template, Target: s, Reason: msg})
	}
	return s, nil
}

// checkResolved returns why s, which template resolved to, goes where the
// template's author did not send it ("" when it does not): a Reserved
// prefix the template does not begin with, or an empty routing key of a
// template that is not empty.
func checkResolved(typ, template, s string) string {
	for _, p := range Reserved[typ] {
		if strings.HasPrefix(s, p) && !strings.HasPrefix(template, p) {
			return fmt.Sprintf("begins with %q, a name the broker keeps for itself: only the template's own text may begin with it", p)
		}
	}
	if s == "" && template != "" {
		return "is empty"
	}
	return ""
}

// TargetError is a template that resolved, for one event, to a target
// its broker can never take: Reason says why (Check's words).
type TargetError struct {
	Field, Template, Target, Reason string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("the %s %q resolves to %q for this event, which %s", e.Field, e.Template, e.Target, e.Reason)
}

// InvalidTarget reports whether err is a publish that failed on its
// target (a *TargetError from Resolve): the same event would fail the same
// way on every retry.
func InvalidTarget(err error) bool {
	_, ok := errors.AsType[*TargetError](err)
	return ok
}

// Expand replaces each {type}, {subject} and {source} in template with the
// event's attribute; any other text is kept as is.
func Expand(template string, f Fields) string {
	if !strings.Contains(template, "{") {
		return template
	}
	return strings.NewReplacer("{type}", f.Type, "{subject}", f.Subject, "{source}", f.Source).Replace(template)
}

// CheckTemplate returns why template can never give a valid target for
// typ ("" when it can): it is checked with each placeholder replaced by a
// plain word, and a brace that is not a known placeholder is refused.
func CheckTemplate(typ, template string) string {
	rest := template
	for _, p := range placeholders {
		rest = strings.ReplaceAll(rest, p, "")
	}
	if strings.ContainsAny(rest, "{}") {
		return "may hold only the placeholders {type}, {subject} and {source}"
	}
	return Check(typ, Expand(template, Fields{Type: "t", Subject: "s", Source: "s"}))
}

// Check returns why s is not a target a destination of typ can publish to
// ("" when it is):
//   - NATS subjects: 1 to MaxTarget bytes, '.'-separated tokens none empty,
//     no wildcard (* or >);
//   - AMQP routing keys: at most MaxTarget bytes (empty is allowed: the
//     fanout and default exchanges ignore it), no empty '.'-separated
//     word unless the key is empty, no * or # (a binding's wildcards);
//   - MQTT topics: 1 to MaxTarget bytes, no wildcard (+ or #), no empty
//     '/'-separated level, no NUL;
//   - Kafka topics: 1 to 249 bytes of ASCII letters, digits, '.', '_'
//     and '-', not "." or "..";
//   - and NATS, AMQP and MQTT targets are valid UTF-8 without whitespace,
//     control characters (C0, DEL, C1) or Unicode noncharacters: MQTT's
//     rule for a topic (Mosquitto closes the connection of a PUBLISH that
//     breaks it, failing every publish on it), kept for the others too.
func Check(typ, s string) string {
	if len(s) > MaxTarget {
		return fmt.Sprintf("is longer than %d bytes", MaxTarget)
	}
	switch typ {
	case TypeNATS:
		return checkSegments(s, ".", "*>", false)
	case TypeAMQP:
		return checkSegments(s, ".", "*#", true)
	case TypeMQTT:
		return checkSegments(s, "/", "+#", false)
	case TypeKafka:
		return checkKafkaTopic(s)
	}
	return "is not for a broker"
}

// checkSegments checks s split at sep: no empty segment, none of the
// wildcards, no whitespace or control character; "" passes only when
// emptyOK.
func checkSegments(s, sep, wildcards string, emptyOK bool) string {
	if s == "" {
		if emptyOK {
			return ""
		}
		return "is empty"
	}
	if strings.ContainsAny(s, wildcards) {
		return "holds a wildcard (" + strings.Join(strings.Split(wildcards, ""), " or ") + ")"
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, c := range s {
		switch {
		case c <= ' ' || c >= 0x7f && c <= 0x9f:
			return "holds whitespace or a control character"
		case c >= 0xfdd0 && c <= 0xfdef || c&0xfffe == 0xfffe:
			return fmt.Sprintf("holds the Unicode noncharacter %U", c)
		}
	}
	for seg := range strings.SplitSeq(s, sep) {
		if seg == "" {
			return "has an empty " + strconvQuote(sep) + "-separated part"
		}
	}
	return ""
}

// checkKafkaTopic checks a Kafka topic name (Kafka's own rule: its
// legal characters and length).
func checkKafkaTopic(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > maxKafkaTopic:
		return fmt.Sprintf("is longer than %d bytes", maxKafkaTopic)
	case s == "." || s == "..":
		return "is not a valid Kafka topic name"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("holds %q: a Kafka topic holds only ASCII letters, digits, '.', '_' and '-'", c)
		}
	}
	return ""
}

func strconvQuote(s string) string { return "'" + s + "'" }

// TargetName names what a destination of typ publishes to, as its field
// is named: subject, routing_key or topic.
func TargetName(typ string) string {
	switch typ {
	case TypeNATS:
		return "subject"
	case TypeAMQP:
		return "routing_key"
	}
	return "topic"
}

// Template is d's target template: its subject, routing key or topic.
func (d *Destination) Template() string {
	switch d.Type {
	case TypeNATS:
		return d.Subject
	case TypeAMQP:
		return d.RoutingKey
	}
	return d.Topic
}
