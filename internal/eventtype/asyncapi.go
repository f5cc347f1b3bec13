package eventtype

import (
	"encoding/json"
	"strconv"
	"strings"
)

// SchemaFormat is the AsyncAPI schemaFormat of the catalog's schemas.
const SchemaFormat = "application/schema+json;version=draft-2020-12"

// AsyncAPI returns the catalog ts (in name order) as an AsyncAPI 3.0.0
// document: a channel per type, whose address is the type's name, holding
// a message per schema version ("v1", "v2", …) with the version's schema
// as its payload (SchemaFormat) and, on the newest, the type's examples;
// and an operation per type, receive, for the subscribers Herald pushes to.
// version is the document's info.version (the catalog's). Channel and
// operation keys are the names with characters other than letters,
// digits, '.', '-' and '_' made '_' (and a number after a key already
// taken).
func AsyncAPI(ts []EventType, version string) map[string]any {
	channels, operations := map[string]any{}, map[string]any{}
	for _, t := range ts {
		key := uniqueKey(channelKey(t.Name), channels)
		msgs, refs := map[string]any{}, []any{}
		for _, v := range t.Versions() {
			mk := "v" + strconv.Itoa(v)
			msgs[mk] = asyncMessage(t, v)
			refs = append(refs, map[string]any{"$ref": "#/channels/" + key + "/messages/" + mk})
		}
		ch := map[string]any{"address": t.Name, "messages": msgs}
		if t.Description != "" {
			ch["description"] = t.Description
		}
		if t.Group != "" {
			ch["tags"] = []any{map[string]any{"name": t.Group}}
		}
		channels[key] = ch
		operations[key] = map[string]any{"action": "receive", "channel": map[string]any{"$ref": "#/channels/" + key},
			"messages": refs, "summary": "Herald delivers " + t.Name + " events to the subscriptions that take them."}
	}
	return map[string]any{
		"asyncapi": "3.0.0",
		"info": map[string]any{"title": "Herald event types", "version": version,
			"description": "The event types of this Herald installation's catalog, as CloudEvents types, with the JSON Schema of each version of their data."},
		"defaultContentType": "application/json",
		"channels":           channels,
		"operations":         operations,
	}
}

// asyncMessage is version v of t as an AsyncAPI message.
func asyncMessage(t EventType, v int) map[string]any {
	m := map[string]any{
		"name":        t.Name,
		"title":       t.Name + " v" + strconv.Itoa(v),
		"contentType": "application/json",
		"payload":     map[string]any{"schemaFormat": SchemaFormat, "schema": json.RawMessage(t.Schemas[v])},
	}
	if t.Description != "" {
		m["summary"] = t.Description
	}
	if t.Deprecated {
		m["x-deprecated"] = true
	}
	if t.Archived() {
		m["x-archived"] = true
	}
	if v == t.Newest() && len(t.Examples) > 0 {
		exs := make([]any, len(t.Examples))
		for i, ex := range t.Examples {
			exs[i] = map[string]any{"payload": json.RawMessage(ex)}
		}
		m["examples"] = exs
	}
	return m
}

// channelKey makes a name a key AsyncAPI's component keys allow.
func channelKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
}

// uniqueKey returns key, or key and a number, whichever is not in taken.
func uniqueKey(key string, taken map[string]any) string {
	k := key
	for i := 2; taken[k] != nil; i++ {
		k = key + "_" + strconv.Itoa(i)
	}
	return k
}
