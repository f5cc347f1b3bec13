package main

import (
	"context"

	"github.com/herald-events/herald/client"
)

// queueVerbs are the subscriptions verbs of a pull (or deactivated push)
// subscription's queue (docs/queue.md): receive under locks, then settle
// with the lock tokens. herald pull receives and acknowledges in a loop.
var queueVerbs = []*verb{
	{name: "receive", summary: "Receive queued deliveries of a subscription under locks; settle them with their lock tokens.",
		args: []string{"ID"}, body: true, rows: "data",
		columns: []column{{"LOCK TOKEN", "lock_token"}, {"DELIVERY", "delivery_id"}, {"COUNT", "delivery_count"},
			{"LOCKED UNTIL", "locked_until"}, {"TYPE", "event.type"}, {"EVENT", "event.id"}},
		flags: []flagSpec{
			{name: "max-events", field: "max_events", kind: kindInt, min: 1, max: 1000, usage: "deliveries at most (default: the API's)"},
			{name: "max-wait", field: "max_wait", kind: kindDuration, usage: "how long to wait for the first (0s..60s; default: none)"},
			{name: "lock-duration", field: "lock_duration", kind: kindDuration, usage: "how long each stays locked (10s..300s; default: the API's)"},
		},
		input: newInput[client.ReceiveParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Receive(ctx, c.id(), input[client.ReceiveParams](c))
		}},
	{name: "acknowledge", summary: "Settle received deliveries as delivered.", args: []string{"ID", "TOKEN..."},
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Acknowledge(ctx, c.id(), c.args[1:])
		}},
	{name: "release", summary: "Give received deliveries back to the queue, after --delay.", args: []string{"ID", "TOKEN..."}, body: true,
		flags: []flagSpec{{name: "delay", field: "delay", values: []string{"0s", "10s", "60s", "600s", "3600s"}, usage: "before they may be received again (default none)"}},
		input: newInput[client.ReleaseParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			p := input[client.ReleaseParams](c)
			p.LockTokens = append(p.LockTokens, c.args[1:]...)
			return c.cl.Subscriptions.Release(ctx, c.id(), p)
		}},
	{name: "reject", summary: "Dead-letter (or drop) received deliveries.", args: []string{"ID", "TOKEN..."},
		run: func(ctx context.Context, c *call) (any, error) {
			return c.cl.Subscriptions.Reject(ctx, c.id(), c.args[1:])
		}},
	{name: "renew-lock", summary: "Extend the locks of received deliveries.", args: []string{"ID", "TOKEN..."}, body: true,
		flags: []flagSpec{{name: "lock-duration", field: "lock_duration", kind: kindDuration, usage: "the new lock, from now (default: the API's)"}},
		input: newInput[client.RenewLockParams](),
		run: func(ctx context.Context, c *call) (any, error) {
			p := input[client.RenewLockParams](c)
			p.LockTokens = append(p.LockTokens, c.args[1:]...)
			return c.cl.Subscriptions.RenewLock(ctx, c.id(), p)
		}},
}
