package client

import (
	"reflect"
	"strings"
	"testing"
)

// TestOpenAPIChecksCatchDrift shows that the checks of
// TestClientMethodsAreOpenAPIOperations and TestTypesMatchOpenAPISchemas
// fail when a route, a field or a parameter is added or removed on one
// side only: each case changes a fresh copy of the document (or compares a
// type with a field more) and wants the difference reported.
func TestOpenAPIChecksCatchDrift(t *testing.T) {
	sent := recordRequests(t)
	path := func(doc node, p string) node { return doc["paths"].(node)[p].(node) }
	schema := func(doc node, name string) node { return doc["components"].(node)["schemas"].(node)[name].(node) }
	cases := []struct {
		name   string
		change func(doc node)
		check  func(doc node) []string
		want   string
	}{
		{"a route only in openapi.yaml", func(doc node) {
			doc["paths"].(node)["/v1/widgets"] = node{"get": node{"responses": node{"200": node{"description": "x"}}}}
		}, opsCheck(sent), "openapi.yaml's GET /v1/widgets has no client method"},
		{"a route only in the client", func(doc node) {
			delete(doc["paths"].(node), "/v1/stats")
		}, opsCheck(sent), "Stats.Get sends GET /v1/stats, which openapi.yaml does not describe"},
		{"a query parameter only in openapi.yaml", func(doc node) {
			get := path(doc, "/v1/deliveries")["get"].(node)
			get["parameters"] = append(get["parameters"].([]any), node{"name": "topic", "in": "query"})
		}, opsCheck(sent), "Deliveries.List: query parameters"},
		{"a query parameter only in the client", func(doc node) {
			get := path(doc, "/v1/endpoints")["get"].(node)
			params := get["parameters"].([]any)
			for i, p := range params {
				if p.(node)["name"] == "state" {
					get["parameters"] = append(params[:i:i], params[i+1:]...)
				}
			}
		}, opsCheck(sent), "Endpoints.List: query parameters [account_id cursor limit state]"},
		{"a field only in openapi.yaml", func(doc node) {
			schema(doc, "Subscription")["properties"].(node)["colour"] = node{"type": "string"}
		}, checkSchemas, `Subscription: openapi.yaml has property "colour"`},
		{"a nested field only in openapi.yaml", func(doc node) {
			schema(doc, "RetryPolicy")["properties"].(node)["cap"] = node{"type": "string"}
		}, checkSchemas, `Subscription.retry_policy: openapi.yaml has property "cap"`},
		{"a field only in the client", func(doc node) {
			delete(schema(doc, "Endpoint")["properties"].(node), "in_flight")
		}, checkSchemas, `Endpoint: client.Endpoint has field "in_flight", openapi.yaml has no such property`},
		{"a new answer schema", func(doc node) {
			ok := path(doc, "/v1/stats")["get"].(node)["responses"].(node)["200"].(node)
			ok["content"].(node)["application/json"].(node)["schema"] = node{"$ref": "#/components/schemas/Attempt"}
		}, checkSchemas, "use schema Attempt, which no client type is held to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := loadOpenAPI(t)
			if diffs := tc.check(doc); len(diffs) != 0 {
				t.Fatalf("the document as it is already differs: %v", diffs)
			}
			tc.change(doc)
			diffs := tc.check(doc)
			if !strings.Contains(strings.Join(diffs, "\n"), tc.want) {
				t.Errorf("after the change the check reported %q, want a line containing %q", diffs, tc.want)
			}
		})
	}

	// A type with a field more than its schema.
	type subscriptionPlus struct {
		Subscription
		Colour string `json:"colour"`
	}
	props, _ := objectProps(loadOpenAPI(t), node{"$ref": "#/components/schemas/Subscription"})
	diffs := compareStruct(loadOpenAPI(t), reflect.TypeFor[subscriptionPlus](), props, "Subscription")
	if want := `has field "colour", openapi.yaml has no such property`; len(diffs) != 1 || !strings.Contains(diffs[0], want) {
		t.Errorf("a struct with an extra field: %q, want one line containing %q", diffs, want)
	}
}

// opsCheck returns checkOperations of a document against sent.
func opsCheck(sent map[string]sentRequest) func(doc node) []string {
	return func(doc node) []string { return checkOperations(v1Operations(doc), sent) }
}
