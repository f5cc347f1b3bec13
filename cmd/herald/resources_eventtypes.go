package main

import (
	"context"

	"github.com/herald-events/herald/client"
)

// eventTypeColumns are the event types' table columns.
var eventTypeColumns = []column{{"NAME", "name"}, {"GROUP", "group"}, {"DEPRECATED", "deprecated"}, {"ARCHIVED", "archived"}, {"DESCRIPTION", "description"}}

// eventTypeFields are the body flags of event-types create and update; the
// schemas and examples come in --file ({"schemas": {"1": {…}}, "examples": […]}).
var eventTypeFields = []flagSpec{
	{name: "description", field: "description", usage: "what the type's events say"},
	{name: "group", field: "group", usage: "the group the console and portal show it in"},
	{name: "deprecated", field: "deprecated", kind: kindBool, usage: "mark the type deprecated"},
}

var eventTypesResource = &resource{
	name:    "event-types",
	summary: "The event-type catalog: types, their JSON Schemas by version and examples (writes: admin keys; docs/event-types.md).",
	verbs: []*verb{
		{name: "list", summary: "List the catalog.", list: true, columns: eventTypeColumns,
			flags: []flagSpec{
				{name: "group", usage: "only the types of this group"},
				{name: "include-archived", kind: kindBool, usage: "list archived types too"},
			},
			run: func(ctx context.Context, c *call) (any, error) {
				archived, _ := c.set["include-archived"].(bool)
				return c.cl.EventTypes.List(ctx, client.EventTypeListParams{ListParams: c.page, Group: c.str("group"), IncludeArchived: archived})
			}},
		{name: "get", summary: "Show a type with its schemas and examples (-o json shows them whole).", args: []string{"NAME"}, columns: eventTypeColumns,
			run: func(ctx context.Context, c *call) (any, error) { return c.cl.EventTypes.Get(ctx, c.id()) }},
		{name: "create", summary: "Add a type: --name, and its schemas and examples in --file.", body: true, columns: eventTypeColumns,
			flags: append([]flagSpec{{name: "name", field: "name", usage: "the type's name, its CloudEvents type"}}, eventTypeFields...),
			input: newInput[client.EventTypeInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.EventTypes.Create(ctx, input[client.EventTypeInput](c))
			}},
		{name: "update", summary: "Change a type, or add a schema version ({\"schemas\": {\"2\": {…}}} in --file); a published version never changes.",
			args: []string{"NAME"}, body: true, columns: eventTypeColumns, flags: eventTypeFields, input: newInput[client.EventTypeInput](),
			run: func(ctx context.Context, c *call) (any, error) {
				return c.cl.EventTypes.Update(ctx, c.id(), input[client.EventTypeInput](c))
			}},
		{name: "archive", summary: "Archive a type (listed only with --include-archived; its events are still delivered).", args: []string{"NAME"},
			columns: eventTypeColumns,
			run:     func(ctx context.Context, c *call) (any, error) { return c.cl.EventTypes.Archive(ctx, c.id()) }},
	},
}
