package client

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// schemaTypes pairs each type the client sends or reads with the schema it
// is in internal/api/openapi.yaml (a component's name, or a JSON pointer
// for a schema written inline). Types within them (RetryPolicy, Event in a
// dead letter, …) are compared where they occur.
var schemaTypes = []struct {
	v      any
	schema string
}{
	{Account{}, "Account"},
	{EventType{}, "EventType"},
	{EventTypeInput{}, "EventTypeInput"},
	{Page[EventType]{}, "EventTypeList"},
	{Source{}, "Source"},
	{SourceInput{}, "SourceInput"},
	{Page[Source]{}, "SourceList"},
	{Page[SourceDeadLetter]{}, "SourceDeadLetterList"},
	{AccountInput{}, "AccountCreate"},
	{AccountUpdate{}, "AccountUpdate"},
	{Page[Account]{}, "AccountList"},
	{APIKey{}, "APIKey"},
	{CreatedAPIKey{}, "APIKeyCreated"},
	{APIKeyInput{}, "APIKeyCreate"},
	{Page[APIKey]{}, "APIKeyList"},
	{Subscription{}, "Subscription"},
	{SubscriptionInput{}, "SubscriptionCreate"},
	{SubscriptionUpdate{}, "SubscriptionUpdate"},
	{Page[Subscription]{}, "SubscriptionList"},
	{SubscriptionSecret{}, "SubscriptionSecret"},
	{RotateSecretParams{}, "SecretRotate"},
	{ReactivatedSubscription{}, "ReactivatedSubscription"},
	{RecoverParams{}, "RecoverRequest"},
	{Job{}, "Job"},
	{TestEventParams{}, "TestEventRequest"},
	{TestEventResult{}, "TestEventResponse"},
	{FilterTestResult{}, "FilterTestResult"},
	{DeliveredPreview{}, "DeliveredPreview"},
	{Event{}, "CloudEvent"},
	{PublishResponse{}, "PublishResponse"},
	{ReceiveParams{}, "ReceiveRequest"},
	{ReceiveResult{}, "ReceiveResponse"},
	{lockTokens{}, "LockTokens"},
	{ReleaseParams{}, "ReleaseRequest"},
	{RenewLockParams{}, "RenewLockRequest"},
	{SettleResult{}, "SettleResponse"},
	{PortalSessionInput{}, "PortalSessionRequest"},
	{PortalSession{}, "PortalSession"},
	{Delivery{}, "Delivery"},
	{Page[Delivery]{}, "DeliveryList"},
	{Page[QueuedDelivery]{}, "QueuedDeliveryList"},
	{Page[Attempt]{}, "AttemptList"},
	{Page[DeadLetter]{}, "DeadLetterList"},
	{RedriveParams{}, "RedriveRequest"},
	{RedriveResult{}, "RedriveResponse"},
	{Endpoint{}, "Endpoint"},
	{EndpointUpdate{}, "EndpointUpdate"},
	{Page[Endpoint]{}, "EndpointList"},
	{Stats{}, "Stats"},
	{Problem{}, "Problem"},
	{ValidationResult{}, "#/paths/~1v1~1validation~1{id}/get/responses/200/content/application~1json/schema"},
}

// rawOnlySchemas are /v1 operations' schemas the client sends only as raw
// bytes (EventsService.PublishRaw): Event Grid's event shapes.
var rawOnlySchemas = []string{"EventGridEvent", "EventGridEventBatch"}

// arraySchemas are the /v1 operations' array schemas the client sends as
// a slice of a type held to its items' schema: PublishBatch's []Event.
var arraySchemas = map[string]string{"CloudEventBatch": "CloudEvent"}

// schemaRef is the $ref of a schemaTypes entry.
func schemaRef(name string) string {
	if strings.HasPrefix(name, "#/") {
		return name
	}
	return "#/components/schemas/" + name
}

// objectProps returns the properties of the object schema n: its own,
// those of its allOf members, or those of its one object oneOf/anyOf
// member (the others being null); ok is false when n has none.
func objectProps(doc, n node) (map[string]node, bool) {
	n = resolve(doc, n)
	props := map[string]node{}
	for _, m := range asList(n["allOf"]) {
		if sub, ok := objectProps(doc, m); ok {
			for k, v := range sub {
				props[k] = v
			}
		}
	}
	if own, ok := n["properties"].(node); ok {
		for k, v := range own {
			props[k] = v.(node)
		}
	}
	if len(props) > 0 {
		return props, true
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, m := range asList(n[key]) {
			if sub, ok := objectProps(doc, m); ok {
				return sub, true
			}
		}
	}
	return nil, false
}

// asNode returns v as a mapping, or an empty one.
func asNode(v any) node {
	if m, ok := v.(node); ok {
		return m
	}
	return node{}
}

// asList returns the YAML sequence v's mapping members.
func asList(v any) []node {
	var out []node
	items, _ := v.([]any)
	for _, it := range items {
		if m, ok := it.(node); ok {
			out = append(out, m)
		}
	}
	return out
}

// elemSchema returns the object schema a field's value holds: n itself,
// or what its items, additionalProperties or non-null oneOf member holds.
func elemSchema(doc, n node) (map[string]node, bool) {
	for range 8 {
		if props, ok := objectProps(doc, n); ok {
			return props, true
		}
		n = resolve(doc, n)
		switch {
		case n["items"] != nil:
			n, _ = n["items"].(node)
		case n["additionalProperties"] != nil:
			ap, ok := n["additionalProperties"].(node)
			if !ok {
				return nil, false
			}
			n = ap
		default:
			return nil, false
		}
		if n == nil {
			return nil, false
		}
	}
	return nil, false
}

// jsonFields returns the JSON member names of struct type rt and their Go
// types, with the fields of embedded structs promoted as encoding/json
// does (the shallower one wins).
func jsonFields(rt reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			embedded = append(embedded, f.Type)
		case f.IsExported() || tag != "":
			if tag == "" {
				tag = f.Name
			}
			fields[tag] = f.Type
		}
	}
	for _, et := range embedded {
		for k, v := range jsonFields(et) {
			if _, ok := fields[k]; !ok {
				fields[k] = v
			}
		}
	}
	return fields
}

// structOf returns the struct type a field of type ft holds (through
// pointers, slices and maps), or nil; time.Time counts as none.
func structOf(ft reflect.Type) reflect.Type {
	for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
		ft = ft.Elem()
	}
	if ft.Kind() != reflect.Struct || ft == reflect.TypeFor[time.Time]() {
		return nil
	}
	return ft
}

// compareStruct compares the JSON member names of rt with the properties
// of the schema (both ways), and recursively the structs its fields hold
// with the schemas of their properties. where names the place for the
// differences it returns.
func compareStruct(doc node, rt reflect.Type, props map[string]node, where string) []string {
	var diffs []string
	fields := jsonFields(rt)
	for _, name := range slices.Sorted(mapsKeys(props)) {
		if _, ok := fields[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: openapi.yaml has property %q, %s has no field for it", where, name, rt))
		}
	}
	for _, name := range slices.Sorted(mapsKeys(fields)) {
		prop, ok := props[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s has field %q, openapi.yaml has no such property", where, rt, name))
			continue
		}
		st := structOf(fields[name])
		if st == nil {
			continue
		}
		sub, ok := elemSchema(doc, prop)
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s.%s: %s is a struct, openapi.yaml's property is not an object with properties", where, name, st))
			continue
		}
		diffs = append(diffs, compareStruct(doc, st, sub, where+"."+name)...)
	}
	return diffs
}

// checkSchemas compares every schemaTypes entry with its schema, and
// checks that every schema a /v1 operation's request body or success
// answer names is an entry's (or sent raw only).
func checkSchemas(doc node) []string {
	var diffs []string
	have := map[string]bool{}
	for _, e := range schemaTypes {
		have[e.schema] = true
		props, ok := objectProps(doc, node{"$ref": schemaRef(e.schema)})
		if !ok {
			diffs = append(diffs, fmt.Sprintf("openapi.yaml's %s is not an object schema with properties", e.schema))
			continue
		}
		diffs = append(diffs, compareStruct(doc, reflect.TypeOf(e.v), props, e.schema)...)
	}
	for _, name := range operationSchemas(doc) {
		if items, ok := arraySchemas[name]; ok {
			if got := schemaName(asNode(resolve(doc, node{"$ref": schemaRef(name)})["items"])); got != items {
				diffs = append(diffs, fmt.Sprintf("openapi.yaml's %s holds %q, the client sends a slice of the type of %s", name, got, items))
			}
			continue
		}
		if !have[name] && !slices.Contains(rawOnlySchemas, name) {
			diffs = append(diffs, fmt.Sprintf("openapi.yaml's /v1 operations use schema %s, which no client type is held to (schemaTypes)", name))
		}
	}
	return diffs
}

// operationSchemas returns the component schemas the /v1 operations'
// request bodies and 2xx answers name (directly, as array items, or as
// oneOf/anyOf members), sorted.
func operationSchemas(doc node) []string {
	seen := map[string]bool{}
	var add func(n node)
	add = func(n node) {
		if name := schemaName(n); name != "" {
			seen[name] = true
			n = resolve(doc, n)
			if it, ok := n["items"].(node); ok {
				add(it)
			}
			return
		}
		for _, key := range []string{"oneOf", "anyOf"} {
			for _, m := range asList(n[key]) {
				add(m)
			}
		}
	}
	addContent := func(holder node) {
		content, _ := resolve(doc, holder)["content"].(node)
		for _, media := range content {
			if s, ok := media.(node)["schema"].(node); ok {
				add(s)
			}
		}
	}
	for path, item := range doc["paths"].(node) {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method, o := range item.(node) {
			if !httpMethods[method] {
				continue
			}
			o := o.(node)
			if rb, ok := o["requestBody"].(node); ok {
				addContent(rb)
			}
			for code, r := range o["responses"].(node) {
				if strings.HasPrefix(code, "2") {
					addContent(r.(node))
				}
			}
		}
	}
	return slices.Sorted(mapsKeys(seen))
}

// TestTypesMatchOpenAPISchemas holds the client's types to the schemas of
// internal/api/openapi.yaml: the JSON names of every field equal the
// schema's properties, both ways, down through nested objects, and every
// schema the /v1 operations send or answer has its type.
func TestTypesMatchOpenAPISchemas(t *testing.T) {
	for _, d := range checkSchemas(loadOpenAPI(t)) {
		t.Error(d)
	}
}
