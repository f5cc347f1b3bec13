package main

import (
	"context"
	"strings"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/source"
)

// Sources' table columns.
var (
	sourceColumns           = []column{{"ID", "id"}, {"NAME", "name"}, {"TYPE", "type"}, {"STATE", "state"}, {"ACCOUNT", "account_id"}, {"RECEIVED", "counts.received"}, {"PUBLISHED", "counts.published"}, {"DEAD", "counts.dead_lettered"}, {"LAG", "lag"}, {"LAST ERROR", "last_error"}}
	sourceDeadLetterColumns = []column{{"ID", "id"}, {"MESSAGE", "message_id"}, {"SIZE", "size"}, {"REASON", "reason"}, {"RECEIVED", "received_at"}}
)

// sourceFields are the body flags of sources create and update; a
// Kafka source's brokers, tls and sasl come in --file or as flags.
var sourceFields = []flagSpec{
	{name: "name", field: "name", usage: "the source's name, unique in its account"},
	{name: "url", field: "url", usage: "nats, amqp, mqtt: the broker's URL (nats://, amqp://, mqtt://…)"},
	{name: "broker", field: "brokers", kind: kindList, usage: "kafka: a broker's host:port (repeat for each)"},
	{name: "subject", field: "subject", usage: "nats: the subject filter of the JetStream consumer"},
	{name: "stream", field: "stream", usage: "nats: the stream holding the subject (default: the one that holds it)"},
	{name: "durable", field: "durable", usage: "nats: the durable consumer's name (default herald-<id>)"},
	{name: "queue", field: "queue", usage: "amqp: the queue consumed"},
	{name: "topic", field: "topic", usage: "mqtt, kafka: the topic consumed"},
	{name: "format", field: "format", values: []string{source.FormatCloudEvents, source.FormatRaw}, usage: "cloudevents (the broker's binding) or raw"},
	{name: "wrap-type", field: "wrap.type", usage: "raw: the type of the events the messages become"},
	{name: "wrap-source", field: "wrap.source", usage: "raw: the source of the events the messages become"},
}

// sourceRemovals are sources update's flags that remove a member (sent
// as null: client.SourceInput.Remove), each named no-<member>.
var sourceRemovals = []flagSpec{
	{name: "no-tls", kind: kindBool, usage: "remove the source's tls settings"},
	{name: "no-sasl", kind: kindBool, usage: "remove the source's sasl settings (kafka)"},
	{name: "no-wrap", kind: kindBool, usage: "remove the raw format's wrap (with --format cloudevents)"},
}

var sourcesResource = &resource{
	name:    "sources",
	summary: "Broker sources: NATS, RabbitMQ, MQTT and Kafka consumers that publish what they read (admin keys; docs/sources.md).",
	verbs: []*verb{
		{name: "list", summary: "List the sources with their state and counts.", list: true, columns: sourceColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.Sources.List(ctx, c.page) }},
		idVerb("get", "Show a source: its settings, state, lag, last error and counts.", sourceColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Source, error) {
				return cl.Sources.Get(ctx, id)
			}),
		{name: "create", summary: "Make a source: --type, its connection, what it reads and its format.", body: true, columns: sourceColumns,
			flags: append([]flagSpec{
				{name: "type", field: "type", values: source.Types, usage: "the broker: nats, amqp, mqtt or kafka"},
				{name: "account", field: "account_id", usage: "the account its events are published in (default acc_default)"},
			}, sourceFields...),
			input: newInput[client.SourceInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Sources.Create(ctx, input[client.SourceInput](c))
			}},
		{name: "update", summary: "Change a source: the fields given replace the stored ones, --no-tls, --no-sasl and --no-wrap remove theirs; its consumer restarts.",
			args: []string{"ID"}, body: true, columns: sourceColumns, flags: append(sourceFields, sourceRemovals...),
			input: newInput[client.SourceInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				in := input[client.SourceInput](c)
				for _, f := range sourceRemovals {
					if on, _ := c.set[f.name].(bool); on {
						in.Remove = append(in.Remove, strings.TrimPrefix(f.name, "no-"))
					}
				}
				return c.cl.Sources.Update(ctx, c.id(), in)
			}},
		idVerb("pause", "Stop a source's consumer; the broker keeps what it has not delivered.", sourceColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Source, error) {
				return cl.Sources.Pause(ctx, id)
			}),
		idVerb("resume", "Start a paused source's consumer again where the broker kept its place.", sourceColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Source, error) {
				return cl.Sources.Resume(ctx, id)
			}),
		deleteVerb("delete", "Delete a source and its dead letters.", func(ctx context.Context, cl *client.Client, id string) error {
			return cl.Sources.Delete(ctx, id)
		}),
		{name: "dead-letters", summary: "List the messages a source could not publish, with the reason (-o json shows the bodies).",
			args: []string{"ID"}, list: true, columns: sourceDeadLetterColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.Sources.DeadLetters(ctx, c.id(), c.page) }},
	},
}
