// Package source is Herald's broker sources (docs/sources.md): a NATS
// JetStream subject, a RabbitMQ queue, an MQTT topic or a Kafka topic that
// Herald consumes and publishes through admission, as if each message had
// been sent to POST /v1/events. This package holds the resource, its
// checks (Input) and its dead letters; internal/sourcing runs the
// consumers; the store keeps them (store.SourceStore).
package source

import (
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/strictjson"
)

// Types of source.
const (
	TypeNATS  = "nats"
	TypeAMQP  = "amqp"
	TypeMQTT  = "mqtt"
	TypeKafka = "kafka"
)

// Types are the types a source may have, in the order errors list them.
var Types = []string{TypeNATS, TypeAMQP, TypeMQTT, TypeKafka}

// Formats of the messages a source reads.
const (
	// FormatCloudEvents: each message is a CloudEvent in its broker's
	// CloudEvents protocol binding, structured or binary mode.
	FormatCloudEvents = "cloudevents"
	// FormatRaw: each message's body is the data of an event of Wrap's
	// type and source whose id is the broker's stable id of the message.
	FormatRaw = "raw"
)

// States of a source as the API shows it.
const (
	StateRunning = "running"
	StatePaused  = "paused"
	StateFailing = "failing"
)

// IDs are the shape of source ids (src_ and a ULID).
var IDs = ids.Shape{Prefix: "src_", Len: 26}

// MaxSources is the most sources one installation holds: every node reads
// them all each round (internal/sourcing), so the bound keeps that read
// small.
const MaxSources = 1000

// Source is one broker source.
type Source struct {
	ID        string
	AccountID string
	Name      string
	Type      string
	// Config is what the consumer connects to and reads, and how.
	Config Config
	// Paused sources have no consumer.
	Paused    bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// Revision counts the writes of the source's Config and Paused (1 at
	// create): a consumer runs the revision it started with, and is
	// restarted when it moves.
	Revision int64
	// Status is what its consumers last reported.
	Status Status
}

// Config is a source's connection and what it reads, as stored (the
// sources table's config column: JSON).
type Config struct {
	Conn broker.Settings `json:"conn"`
	// Subject (NATS) is the subject filter of the JetStream consumer;
	// Stream the stream that holds it ("" : looked up by subject);
	// Durable the durable consumer's name ("": herald-<source id>).
	Subject string `json:"subject,omitempty"`
	Stream  string `json:"stream,omitempty"`
	Durable string `json:"durable,omitempty"`
	// Queue (AMQP) is the queue consumed.
	Queue string `json:"queue,omitempty"`
	// Topic (MQTT, Kafka) is the topic (MQTT: a topic filter) consumed.
	Topic  string `json:"topic,omitempty"`
	Format string `json:"format"`
	// Wrap (FormatRaw) is the type and source of the events made of raw
	// messages.
	Wrap *Wrap `json:"wrap,omitempty"`
}

// Wrap is what a raw message's event is given.
type Wrap struct {
	Type   string `json:"type"`
	Source string `json:"source"`
}

// Status is what a source's consumers report (internal/sourcing), kept
// with the source so that every node shows it.
type Status struct {
	// Received counts the messages read; Published those that made a new
	// event, Duplicates those whose (source, id) was published before,
	// DeadLettered those stored as the source's dead letters.
	Received, Published, Duplicates, DeadLettered int64
	// Lag is the messages the broker holds for the consumer that it has
	// not delivered yet, as last told (-1: unknown; MQTT never tells).
	Lag int64
	// LastError is the last error the consumer met ("" : none) and
	// LastErrorAt when; Failing says the consumer has not read a message
	// since.
	LastError   string
	LastErrorAt time.Time
	Failing     bool
}

// State is how the API shows the source: paused, failing or running.
func (s Source) State() string {
	switch {
	case s.Paused:
		return StatePaused
	case s.Status.Failing:
		return StateFailing
	}
	return StateRunning
}

// SameSettings reports whether s and o have the same name and config (a
// change to s that would leave it as o is no change: nothing to write,
// no consumer to restart).
func (s Source) SameSettings(o Source) bool {
	return s.Name == o.Name && reflect.DeepEqual(s.Config, o.Config)
}

// DurableName is the JetStream durable consumer's name: Config.Durable,
// or herald-<id>.
func (s Source) DurableName() string {
	if s.Config.Durable != "" {
		return s.Config.Durable
	}
	return "herald-" + s.ID
}

// Report is a consumer's news of its source for the store
// (store.SourceStore.ReportSource): counts to add, and the lag and error
// as of now.
type Report struct {
	Received, Published, Duplicates int64
	// Lag: -1 unknown.
	Lag int64
	// Err, when not empty, is the error met at ErrAt; the source is
	// failing until a report with Read.
	Err   string
	ErrAt time.Time
	// Read: a message was read since the last report (the source is not
	// failing, whatever its last error).
	Read bool
}

// DeadLetter is a message of a source that could not be published: it
// could not be parsed, or admission refused its event for good.
type DeadLetter struct {
	ID       string
	SourceID string
	// MessageID is the broker's id of the message (as raw events take it).
	MessageID string
	Reason    string
	// Body is the message's body, its first MaxDeadLetterBody bytes; Size
	// its length whole.
	Body       []byte
	Size       int64
	ReceivedAt time.Time
}

// Bounds of the dead letters.
const (
	// MaxDeadLetterBody is the most bytes of a message kept with its dead
	// letter.
	MaxDeadLetterBody = 64 << 10
	// MaxDeadLetters is the most dead letters kept per source: the oldest
	// are deleted as new ones come.
	MaxDeadLetters = 10_000
	// MaxReason bounds a dead letter's reason, and a source's last error,
	// in bytes.
	MaxReason = 1024
	// MaxMessageID bounds a dead letter's message id, in bytes (an AMQP
	// message-id's own bound).
	MaxMessageID = 255
)

// Text is s, which a broker or a message gave, as a source's dead letter
// or status keeps it: valid UTF-8 without NUL (what a PostgreSQL text
// column takes: an invalid sequence or a NUL byte shown as U+FFFD, so
// that one hostile message id never fails the store write that lets the
// source go on), cut to its first max bytes at a character's start.
func Text(s string, max int) string {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
	}
	return strictjson.Cut(s, max)
}

// DeadLetterIDs are the shape of dead letter ids.
var DeadLetterIDs = ids.Shape{Prefix: "sdl_", Len: 26}

// NewDeadLetter returns the dead letter of a message of the source, its
// body, reason and message id cut to their bounds, the last two as Text.
func NewDeadLetter(sourceID, messageID, reason string, body []byte, now time.Time) DeadLetter {
	reason, messageID = Text(reason, MaxReason), Text(messageID, MaxMessageID)
	kept := body
	if len(kept) > MaxDeadLetterBody {
		kept = kept[:MaxDeadLetterBody]
	}
	return DeadLetter{ID: ids.New(DeadLetterIDs.Prefix, now), SourceID: sourceID, MessageID: messageID, Reason: reason,
		Body: append([]byte{}, kept...), Size: int64(len(body)), ReceivedAt: now}
}
