package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/subscription"
)

// resources are the API's resources as herald commands, in the order
// herald help lists them; each verb calls one operation of the Go client
// (package client). The verbs of each resource are in resources_*.go.
var resources = []*resource{
	subscriptionsResource,
	eventsResource,
	deliveriesResource,
	deadLettersResource,
	endpointsResource,
	accountsResource,
	eventTypesResource,
	sourcesResource,
	keysResource,
	jobsResource,
}

// Table columns, by resource.
var (
	subscriptionColumns = []column{{"ID", "id"}, {"NAME", "name"}, {"MODE", "delivery_mode"}, {"STATE", "state"}, {"URL", "url"}, {"EVENT TYPES", "event_types"}}
	deliveryColumns     = []column{{"ID", "id"}, {"SUBSCRIPTION", "subscription_id"}, {"EVENT", "event_id"}, {"STATUS", "status"}, {"ATTEMPTS", "attempts"}, {"LAST CODE", "last_status_code"}, {"CREATED", "created_at"}, {"NEXT ATTEMPT", "next_attempt_at"}, {"HELD BY", "held_by"}}
	attemptColumns      = []column{{"NUMBER", "number"}, {"STARTED", "started_at"}, {"MS", "duration_ms"}, {"CODE", "status_code"}, {"OUTCOME", "outcome"}, {"ERROR", "error"}}
	deadLetterColumns   = []column{{"ID", "id"}, {"SUBSCRIPTION", "subscription_id"}, {"EVENT", "event_id"}, {"ATTEMPTS", "attempts"}, {"REASON", "dead_letter_reason"}, {"SCHEMA ERRORS", "schema_errors[].keyword"}, {"CREATED", "created_at"}}
	endpointColumns     = []column{{"ID", "id"}, {"STATE", "state"}, {"REASON", "state_reason"}, {"FAILURES", "consecutive_failures"}, {"RATE/S", "rate_limit.per_second"}, {"BURST", "rate_limit.burst"}, {"URL", "url"}}
	accountColumns      = []column{{"ID", "id"}, {"NAME", "name"}, {"FAILURE POLICY", "settings.failure_policy"}, {"CREATED", "created_at"}}
	keyColumns          = []column{{"ID", "id"}, {"ACCOUNT", "account_id"}, {"ROLE", "role"}, {"NAME", "name"}, {"PREFIX", "prefix"}, {"CREATED", "created_at"}}
	jobColumns          = []column{{"ID", "id"}, {"KIND", "kind"}, {"STATE", "state"}, {"SUBSCRIPTION", "subscription_id"}, {"TOTAL", "total"}, {"DONE", "done"}, {"ERRORS", "errors"}, {"FINISHED", "finished_at"}}
)

// Flag values that are the API's fixed sets, from the packages that own
// them.
var (
	failurePolicies  = []string{subscription.FailureRetry, subscription.FailureQueue}
	deliveryModes    = []string{subscription.ModePush, subscription.ModePull}
	keyRoles         = []string{account.RoleAdmin, account.RoleAccount, account.RolePublish}
	deliveryStatuses = stringsOf(delivery.Statuses)
	endpointStates   = stringsOf(health.States)
	recoverStatuses  = []string{string(delivery.StatusDeadLettered), string(delivery.StatusDropped), string(delivery.StatusQueued)}
)

// stringsOf returns vs as strings.
func stringsOf[S ~string](vs []S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// id is the verb's ID argument (its first).
func (c *call) id() string { return c.args[0] }

// idVerb is a verb that takes one ID and calls do with it.
func idVerb[T any](name, summary string, cols []column, do func(ctx context.Context, cl *client.Client, id string) (T, error)) *verb {
	return &verb{name: name, summary: summary, args: []string{"ID"}, columns: cols,
		run: func(ctx context.Context, c *call) (any, error) { return do(ctx, c.cl, c.id()) }}
}

// deleteVerb is a verb that takes one ID and calls do, which answers no
// body.
func deleteVerb(name, summary string, do func(ctx context.Context, cl *client.Client, id string) error) *verb {
	return &verb{name: name, summary: summary, args: []string{"ID"},
		run: func(ctx context.Context, c *call) (any, error) { return deleted{c.id()}, do(ctx, c.cl, c.id()) }}
}

// input returns the verb's typed request body, decoded in newCall.
func input[T any](c *call) T { return *c.input.(*T) }

// newInput returns a verb's input constructor for T.
func newInput[T any]() func() any { return func() any { return new(T) } }

// findResource returns the resource named name, or nil.
func findResource(name string) *resource {
	for _, res := range resources {
		if res.name == name {
			return res
		}
	}
	return nil
}

// resourcesUsage lists the resources and their verbs for herald help.
func resourcesUsage() string {
	var b strings.Builder
	for _, res := range resources {
		fmt.Fprintf(&b, "        herald %-14s %s\n", res.name, strings.Join(res.verbNames(), ", "))
	}
	return b.String()
}
