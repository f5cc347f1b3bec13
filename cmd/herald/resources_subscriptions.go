package main

import (
	"context"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/retry"
)

// subscriptionFields are the flags of subscriptions create and update
// that set a field of the body (see docs/subscriptions.md for each).
var subscriptionFields = []flagSpec{
	{name: "name", field: "name", usage: "the subscription's name (unique in its account)"},
	{name: "url", field: "url", usage: "the URL events are pushed to (a push subscription)"},
	{name: "event-type", field: "event_types", kind: kindList, usage: "an event type it takes (repeat the flag for more; none: every type)"},
	{name: "subject-begins-with", field: "subject_begins_with", usage: "only events whose subject begins with this"},
	{name: "subject-ends-with", field: "subject_ends_with", usage: "only events whose subject ends with this"},
	{name: "retry-preset", field: "retry_policy.preset", values: retry.Presets(), usage: "the retry policy's preset (herald policy list says each)"},
	{name: "delay", field: "retry_policy.delays", kind: kindDurations, usage: "the retry policy's delays, one per retry (repeat the flag, or separate by commas: --delay 10s,1m,10m; the last repeats until max attempts or the ttl); with --retry-preset custom the whole schedule, with another preset its schedule alone"},
	{name: "ttl", field: "retry_policy.ttl", kind: kindDuration, usage: "the retry policy's time to live: how long after publish a retry may still happen (the range depends on the preset)"},
	{name: "max-attempts", field: "retry_policy.max_attempts", kind: kindInt, min: 0, max: 1000, usage: "the retry policy's attempts in all (0: only its ttl bounds it; the range depends on the preset)"},
	{name: "failure-policy", field: "failure_policy", values: failurePolicies, usage: "what a failed push does: retry (the retry policy), or queue (deactivate the subscription)"},
	{name: "dead-letter", field: "dead_letter", kind: kindBool, usage: "keep what the retry policy gives up on as dead letters (--dead-letter=false drops it)"},
	{name: "delivery-schema", field: "delivery_schema", values: event.Schemas(), usage: "how events are pushed (docs/schemas.md)"},
	{name: "dead-letter-url", field: "dead_letter_url", usage: "a URL dead letters are pushed to"},
	{name: "filter-expression", field: "filter_expression", usage: "a CEL boolean on event and data, ANDed with the other filters (\"\": none; docs/subscriptions.md)"},
	{name: "transform", field: "transform.cel", usage: "a CEL expression whose result is the delivered data; null skips the event (\"\": none; docs/subscriptions.md)"},
}

var subscriptionsResource = &resource{
	name:    "subscriptions",
	summary: "Subscriptions: where events go and how they are retried (docs/subscriptions.md), and their queues (docs/queue.md).",
	account: true,
	verbs:   append(subscriptionVerbs, queueVerbs...),
}

var subscriptionVerbs = []*verb{
	{name: "list", summary: "List the account's subscriptions, oldest first.", list: true, columns: subscriptionColumns,
		flags: []flagSpec{{name: "name", usage: "only the subscription of this name"}},
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.List(ctx, client.SubscriptionListParams{ListParams: c.page, Name: c.str("name")})
		}},
	idVerb("get", "Show a subscription.", subscriptionColumns, func(ctx context.Context, cl *client.Client, id string) (*client.Subscription, error) {
		return cl.Subscriptions.Get(ctx, id)
	}),
	{name: "create", summary: "Create a subscription.", body: true, columns: subscriptionColumns,
		flags: append([]flagSpec{{name: "delivery-mode", field: "delivery_mode", values: deliveryModes,
			usage: "push (to --url) or pull (consumers receive, as herald pull does)"}}, subscriptionFields...),
		input: newInput[client.SubscriptionInput](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Create(ctx, input[client.SubscriptionInput](c))
		}},
	{name: "update", summary: "Change a subscription: the fields given replace the stored ones.", args: []string{"ID"}, body: true,
		columns: subscriptionColumns, flags: subscriptionFields, input: newInput[client.SubscriptionUpdate](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Update(ctx, c.id(), input[client.SubscriptionUpdate](c))
		}},
	deleteVerb("delete", "Delete a subscription (its pending deliveries are dropped).", func(ctx context.Context, cl *client.Client, id string) error {
		return cl.Subscriptions.Delete(ctx, id)
	}),
	idVerb("secret", "Show a subscription's signing key, and the earlier ones still signing.", nil, func(ctx context.Context, cl *client.Client, id string) (*client.SubscriptionSecret, error) {
		return cl.Subscriptions.Secret(ctx, id)
	}),
	{name: "rotate-secret", summary: "Make a new signing key current; the old one keeps signing for --grace.", args: []string{"ID"}, body: true,
		flags: []flagSpec{
			{name: "grace", field: "grace", kind: kindDuration, usage: "how long the current key keeps signing (0s: not at all; default: the server's)"},
			{name: "secret", field: "secret", usage: "the new whsec_ key (default: a random one)"},
		},
		input: newInput[client.RotateSecretParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.RotateSecret(ctx, c.id(), input[client.RotateSecretParams](c))
		}},
	idVerb("reactivate", "Make a deactivated push subscription active; its queued deliveries are pushed.", subscriptionColumns,
		func(ctx context.Context, cl *client.Client, id string) (*client.ReactivatedSubscription, error) {
			return cl.Subscriptions.Reactivate(ctx, id)
		}),
	idVerb("deactivate", "Pause a push subscription: its deliveries queue until reactivate.", subscriptionColumns,
		func(ctx context.Context, cl *client.Client, id string) (*client.Subscription, error) {
			return cl.Subscriptions.Deactivate(ctx, id)
		}),
	{name: "recover", summary: "Start a job making the deliveries of a time range due again (docs/recover.md); herald jobs get follows it.",
		args: []string{"ID"}, body: true, columns: jobColumns,
		flags: []flagSpec{
			{name: "since", field: "since", kind: kindTime, usage: "deliveries made at or after this time (RFC 3339)"},
			{name: "until", field: "until", kind: kindTime, usage: "deliveries made before this time (default: now)"},
			{name: "status", field: "statuses", kind: kindList, values: recoverStatuses,
				usage: "a status recovered (repeat for more; default dead_lettered and dropped)"},
		},
		input: newInput[client.RecoverParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Recover(ctx, c.id(), input[client.RecoverParams](c))
		}},
	{name: "test", summary: "Send a test event to the subscription alone, through the normal delivery path.", args: []string{"ID"}, body: true,
		flags: []flagSpec{
			{name: "type", field: "type", usage: "the test event's type (default herald.test)"},
			{name: "payload", field: "data", kind: kindJSON, usage: "the test event's data, a JSON object"},
		},
		input: newInput[client.TestEventParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Test(ctx, c.id(), input[client.TestEventParams](c))
		}},
}
