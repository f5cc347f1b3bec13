package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	"github.com/herald-events/herald/client"
)

var eventsResource = &resource{
	name:    "events",
	summary: "Events: publishing CloudEvents (docs/publishing.md).",
	account: true,
	verbs: []*verb{
		{name: "publish", body: true,
			summary: "Publish one CloudEvent (structured mode). specversion defaults to 1.0 and id to a random one; the answer says the deliveries it made.",
			columns: []column{{"ID", "id"}, {"SOURCE", "source"}, {"DUPLICATE", "duplicate"}, {"DELIVERIES", "deliveries"},
				{"SCHEMA ERRORS", "schema_errors[].keyword"}}, rows: "events",
			flags: []flagSpec{
				{name: "type", field: "type", usage: "the event's type"},
				{name: "source", field: "source", usage: "the event's source (a URI reference, /shop)"},
				{name: "subject", field: "subject", usage: "the event's subject"},
				{name: "id", field: "id", usage: "the event's id (default: a random one; the same source and id again is a duplicate)"},
				{name: "payload", field: "data", kind: kindJSON, usage: "the event's data, JSON (--data is the data directory, as for every client command)"},
			},
			run: publish},
	},
}

// publish publishes the call's body as one structured CloudEvent.
func publish(ctx context.Context, c *call) (any, error) {
	if _, ok := c.body["specversion"]; !ok {
		c.body["specversion"] = "1.0"
	}
	if _, ok := c.body["id"]; !ok {
		c.body["id"] = "cli-" + rand.Text()
	}
	if _, ok := c.body["data"]; ok {
		if _, ok := c.body["datacontenttype"]; !ok {
			c.body["datacontenttype"] = "application/json"
		}
	}
	b, err := json.Marshal(c.body)
	if err != nil {
		return nil, err
	}
	return c.cl.Events.PublishRaw(ctx, client.RawPublish{ContentType: "application/cloudevents+json", Body: b})
}

var deliveriesResource = &resource{
	name:    "deliveries",
	summary: "Deliveries: the delivery log, the attempt log and redelivery (docs/delivery.md).",
	account: true,
	verbs: []*verb{
		{name: "list", summary: "Search the delivery log, newest first.", list: true, columns: deliveryColumns,
			flags: []flagSpec{
				{name: "subscription", usage: "only this subscription's deliveries (its id)"},
				{name: "status", values: deliveryStatuses, usage: "only deliveries in this status"},
				{name: "event-id", usage: "only deliveries of events with this id"},
				{name: "url", usage: "only queued deliveries to this URL (with --status queued)"},
				{name: "ordering-key", usage: "only deliveries with this ordering key (with --subscription)"},
			},
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Deliveries.List(ctx, client.DeliveryListParams{ListParams: c.page, SubscriptionID: c.str("subscription"),
					Status: c.str("status"), EventID: c.str("event-id"), URL: c.str("url"), OrderingKey: c.str("ordering-key")})
			}},
		idVerb("get", "Show a delivery.", deliveryColumns, func(ctx context.Context, cl *client.Client, id string) (*client.Delivery, error) {
			return cl.Deliveries.Get(ctx, id)
		}),
		{name: "attempts", summary: "List a delivery's attempts, oldest first.", args: []string{"ID"}, list: true, columns: attemptColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.Deliveries.Attempts(ctx, c.id(), c.page) }},
		idVerb("redeliver", "Make a delivery due now with a fresh attempt budget, whatever its status.", deliveryColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Delivery, error) {
				return cl.Deliveries.Redeliver(ctx, id)
			}),
	},
}

var deadLettersResource = &resource{
	name:    "dead-letters",
	summary: "Dead letters: deliveries whose retry policy gave up, and redriving them (docs/delivery.md).",
	account: true,
	verbs: []*verb{
		{name: "list", summary: "List the account's dead-lettered deliveries, newest first.", list: true, columns: deadLetterColumns,
			flags: []flagSpec{{name: "subscription", usage: "only this subscription's dead letters (its id)"}},
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.DeadLetters.List(ctx, client.DeadLetterListParams{ListParams: c.page, SubscriptionID: c.str("subscription")})
			}},
		{name: "redrive", summary: "Make dead letters due again: those named, or every one of --subscription.", args: []string{"[ID...]"}, body: true,
			flags: []flagSpec{{name: "subscription", field: "subscription_id", usage: "the subscription whose dead letters go (with IDs: only those of it)"}},
			input: newInput[client.RedriveParams](),
			run: func(ctx context.Context, c *call) (any, error) {
				p := input[client.RedriveParams](c)
				p.IDs = append(p.IDs, c.args...)
				return c.cl.DeadLetters.Redrive(ctx, p)
			}},
	},
}

var endpointsResource = &resource{
	name:    "endpoints",
	summary: "Endpoints: delivery URLs and their circuit state (docs/endpoints.md).",
	account: true,
	verbs: []*verb{
		{name: "list", summary: "List the account's endpoints.", list: true, columns: endpointColumns,
			flags: []flagSpec{{name: "state", values: endpointStates, usage: "only endpoints in this state"}},
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Endpoints.List(ctx, client.EndpointListParams{ListParams: c.page, State: c.str("state")})
			}},
		idVerb("get", "Show an endpoint's health.", endpointColumns, func(ctx context.Context, cl *client.Client, id string) (*client.Endpoint, error) {
			return cl.Endpoints.Get(ctx, id)
		}),
		{name: "update", summary: "Set an endpoint's rate limit (--per-second and --burst), or remove it (--no-rate-limit).",
			args: []string{"ID"}, body: true, columns: endpointColumns,
			flags: []flagSpec{
				{name: "per-second", field: "rate_limit.per_second", kind: kindNumber, usage: "requests a second at most (0.01..10000)"},
				{name: "burst", field: "rate_limit.burst", kind: kindInt, min: 1, max: 10000, usage: "requests at once after a pause"},
				{name: "no-rate-limit", kind: kindBool, usage: "remove the endpoint's rate limit"},
			},
			input: newInput[client.EndpointUpdate](), check: checkRateLimit,
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Endpoints.Update(ctx, c.id(), input[client.EndpointUpdate](c))
			}},
		idVerb("enable", "Put an endpoint back to enabled and reset its failure counters.", endpointColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Endpoint, error) {
				return cl.Endpoints.Enable(ctx, id)
			}),
		idVerb("freeze", "Freeze an endpoint: no attempts until enable.", endpointColumns,
			func(ctx context.Context, cl *client.Client, id string) (*client.Endpoint, error) {
				return cl.Endpoints.Freeze(ctx, id)
			}),
	},
}

// checkRateLimit refuses an endpoints update that would remove the rate
// limit without --no-rate-limit (the body's rate_limit absent is null to
// the client), or that asks for both.
func checkRateLimit(c *call) error {
	_, has := c.body["rate_limit"]
	remove, _ := c.set["no-rate-limit"].(bool)
	switch {
	case remove && has:
		return errors.New("--no-rate-limit: with --per-second, --burst or a rate_limit in --file; give one or the other")
	case !remove && !has:
		return errors.New("--per-second and --burst: give both (or --file with rate_limit), or --no-rate-limit")
	}
	return nil
}

var accountsResource = &resource{
	name:    "accounts",
	summary: "Accounts: tenants; everything else belongs to one (admin keys only; docs/accounts.md).",
	verbs: []*verb{
		{name: "list", summary: "List the accounts.", list: true, columns: accountColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.Accounts.List(ctx, c.page) }},
		idVerb("get", "Show an account.", accountColumns, func(ctx context.Context, cl *client.Client, id string) (*client.Account, error) {
			return cl.Accounts.Get(ctx, id)
		}),
		{name: "create", summary: "Create an account (it has no key: herald keys create --account makes one).", body: true, columns: accountColumns,
			flags: accountFields, input: newInput[client.AccountInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Accounts.Create(ctx, input[client.AccountInput](c))
			}},
		{name: "update", summary: "Change an account: the fields given replace the stored ones.", args: []string{"ID"}, body: true,
			columns: accountColumns, flags: accountFields, input: newInput[client.AccountUpdate](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Accounts.Update(ctx, c.id(), input[client.AccountUpdate](c))
			}},
		deleteVerb("delete", "Delete an account and its keys (it must have no subscriptions).", func(ctx context.Context, cl *client.Client, id string) error {
			return cl.Accounts.Delete(ctx, id)
		}),
	},
}

// accountFields are the body flags of accounts create and update.
var accountFields = []flagSpec{
	{name: "name", field: "name", usage: "the account's name (unique)"},
	{name: "failure-policy", field: "settings.failure_policy", values: failurePolicies, usage: "its subscriptions' default failure_policy"},
}

var keysResource = &resource{
	name:    "keys",
	summary: "API keys: their roles and revocation (docs/accounts.md).",
	account: true,
	verbs: []*verb{
		{name: "list", summary: "List the account's keys (without the keys themselves).", list: true, columns: keyColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.Keys.List(ctx, c.page) }},
		{name: "create", summary: "Make a key in the account (--account with an admin key): the answer is the only one that holds it.", body: true,
			columns: append(keyColumns[:len(keyColumns):len(keyColumns)], column{"KEY", "key"}),
			flags: []flagSpec{
				{name: "role", field: "role", values: keyRoles, usage: "what the key may do"},
				{name: "name", field: "name", usage: "the key's name"},
			},
			input: newInput[client.APIKeyInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.Keys.Create(ctx, input[client.APIKeyInput](c))
			}},
		deleteVerb("delete", "Revoke a key.", func(ctx context.Context, cl *client.Client, id string) error { return cl.Keys.Delete(ctx, id) }),
	},
}

var jobsResource = &resource{
	name:    "jobs",
	summary: "Jobs: background work such as a recover (docs/recover.md).",
	account: true,
	verbs: []*verb{
		idVerb("get", "Show a job and its progress.", jobColumns, func(ctx context.Context, cl *client.Client, id string) (*client.Job, error) {
			return cl.Jobs.Get(ctx, id)
		}),
	},
}
