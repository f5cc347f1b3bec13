package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/control"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/pipeline"
	"github.com/herald-events/herald/internal/queue"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store/sqlite"
	"github.com/herald-events/herald/internal/subscription"
)

// testServer is a Server on a fresh SQLite store in t.TempDir(), with its
// handler built.
type testServer struct {
	srv     *Server
	handler http.Handler
}

func setupServer(t *testing.T) testServer {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	cat := catalog.New(st)
	clk := clock.Real{}
	pipe := pipeline.New(pipeline.Config{Store: st, Catalog: cat, Clock: clk})
	t.Cleanup(pipe.Stop)
	srv := &Server{
		Store: st,
		Control: &control.Service{Store: st, Catalog: cat, Scheduler: pipe.Scheduler, Attempts: pipe.Attempter,
			Deactivations: pipe.Recorder, Clock: clk, Logger: slog.New(slog.DiscardHandler)},
		Accounts:   &control.Accounts{Store: st, Clock: clk},
		EventTypes: &control.EventTypes{Store: st, Clock: clk},
		Publisher:  pipe.Admission,
		Live:       pipe.Scheduler,
		Queue:      queue.New(st, clk, prometheus.NewRegistry(), pipe.Finished, nil),
		Version:    "test",
		// No test asks the network's DNS at create.
		Destinations: destination.Guard{Resolver: unknownNames{}},
	}
	return testServer{srv: srv, handler: srv.Handler()}
}

// unknownNames is a resolver that finds no name.
type unknownNames struct{}

func (unknownNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = map[string]bool{
	"get": true, "put": true, "post": true, "delete": true,
	"options": true, "head": true, "patch": true, "trace": true,
}

// documentedOperations reads the "METHOD /path" of every operation in the
// document's paths object from the YAML text, without a YAML parser: under
// the top-level "paths:" key, a path is a key indented by two spaces that
// starts with "/", and an operation a method key indented by four spaces
// under it.
func documentedOperations(t *testing.T, doc []byte) []string {
	t.Helper()
	var ops []string
	inPaths := false
	path := ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(trimmed)
		if indent == 0 {
			inPaths = line == "paths:"
			path = ""
			continue
		}
		if !inPaths {
			continue
		}
		key, rest, ok := cutKey(trimmed)
		if !ok {
			continue
		}
		key = strings.Trim(key, `'"`)
		block := strings.TrimSpace(rest) == "" || strings.HasPrefix(strings.TrimSpace(rest), "#")
		switch {
		case indent == 2:
			if !strings.HasPrefix(key, "/") || !block {
				t.Fatalf("openapi.yaml:%d: want a path key such as \"  /v1/events:\", got %q", n, line)
			}
			path = key
		case indent == 4 && httpMethods[key]:
			if !block {
				t.Fatalf("openapi.yaml:%d: want an operation object under %q, got %q", n, key, line)
			}
			ops = append(ops, strings.ToUpper(key)+" "+path)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestOpenAPIDocumentsEveryRoute checks that the OpenAPI document describes
// exactly the operations Handler serves: every route pattern has a path and
// method in the document, and every documented operation reaches a route's
// handler rather than the catch-all 404.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	ts := setupServer(t)

	if !bytes.HasPrefix(openAPI, []byte("openapi: 3.1.")) {
		t.Fatalf("openapi.yaml does not start with \"openapi: 3.1.\"")
	}
	ops := documentedOperations(t, openAPI)
	if len(ops) == 0 {
		t.Fatal("found no operations under paths: in openapi.yaml")
	}
	documented := map[string]bool{}
	for _, op := range ops {
		if documented[op] {
			t.Errorf("openapi.yaml describes %s twice", op)
		}
		documented[op] = true
	}

	registered := map[string]bool{}
	for _, rt := range ts.srv.routes() {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			t.Errorf("route %q has no method: every route must name one", rt.pattern)
			continue
		}
		registered[rt.pattern] = true
		if !documented[rt.pattern] {
			t.Errorf("route %q is not in openapi.yaml (want path %s with method %s)", rt.pattern, path, strings.ToLower(method))
		}
	}
	for _, op := range ops {
		if !registered[op] {
			t.Errorf("openapi.yaml describes %s, which no route serves", op)
		}
	}

	// Send each documented operation through the handler (path parameters
	// filled with an id that does not exist, no body): it must be answered
	// by its route, not by the catch-all.
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		target := path
		for strings.Contains(target, "{") {
			i := strings.Index(target, "{")
			j := strings.Index(target[i:], "}")
			if j < 0 {
				t.Fatalf("unbalanced braces in path %q", path)
			}
			target = target[:i] + "x_missing" + target[i+j+1:]
		}
		rec := httptest.NewRecorder()
		ts.handler.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
		if rec.Code == http.StatusNotFound {
			var p Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err == nil && strings.HasPrefix(p.Detail, "no route ") {
				t.Errorf("%s %s fell through to the catch-all: %s", method, target, p.Detail)
			}
		}
		if rec.Code == http.StatusInternalServerError {
			t.Errorf("%s %s answered 500: %s", method, target, rec.Body.String())
		}
	}
}

// TestOpenAPIServed checks that GET /openapi.yaml answers the embedded
// document as application/yaml.
func TestOpenAPIServed(t *testing.T) {
	ts := setupServer(t)
	srv := httptest.NewServer(ts.handler)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.yaml: status %d, want 200; body %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("GET /openapi.yaml: Content-Type %q, want application/yaml", ct)
	}
	if !bytes.Equal(body, openAPI) {
		t.Errorf("GET /openapi.yaml: body (%d bytes) is not the embedded document (%d bytes)", len(body), len(openAPI))
	}
}

// operationFields reads, for every operation of the document's paths
// object ("METHOD /path"), the scalar members written on one line directly
// under it (indented by six spaces), as documentedOperations reads the
// operations.
func operationFields(t *testing.T, doc []byte) map[string]map[string]string {
	t.Helper()
	ops := map[string]map[string]string{}
	inPaths := false
	path, op := "", ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(trimmed)
		switch {
		case indent == 0:
			inPaths, path, op = line == "paths:", "", ""
			continue
		case !inPaths:
			continue
		}
		key, rest, ok := cutKey(trimmed)
		if !ok {
			continue
		}
		key, rest = strings.Trim(key, `'"`), strings.TrimSpace(rest)
		switch {
		case indent == 2:
			path, op = key, ""
		case indent == 4 && httpMethods[key]:
			op = strings.ToUpper(key) + " " + path
			ops[op] = map[string]string{}
		case indent == 4:
			op = ""
		case indent == 6 && op != "" && rest != "":
			ops[op][key] = rest
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestOpenAPIDocumentsAccess checks that every operation's x-herald-access
// is the access its route has (Server.Routes), and that exactly the public
// ones override the document's bearer-key requirement with "security: []"
// (the others inherit it and document 401).
func TestOpenAPIDocumentsAccess(t *testing.T) {
	ts := setupServer(t)
	if !bytes.Contains(openAPI, []byte("\nsecurity:\n  - apiKey: []\n")) {
		t.Error("openapi.yaml has no global security requirement \"security:\\n  - apiKey: []\"")
	}
	ops := operationFields(t, openAPI)
	for _, rt := range ts.srv.Routes() {
		fields, ok := ops[rt.Pattern]
		if !ok {
			continue // TestOpenAPIDocumentsEveryRoute reports it
		}
		if got := fields["x-herald-access"]; got != rt.Access {
			t.Errorf("%s: x-herald-access is %q in openapi.yaml, the route's access is %q", rt.Pattern, got, rt.Access)
		}
		sec, hasSec := fields["security"]
		if public := rt.Access == "public"; public != (hasSec && sec == "[]") {
			t.Errorf("%s (access %s): security %q in openapi.yaml; want \"[]\" exactly for public routes, none for the others", rt.Pattern, rt.Access, sec)
		}
	}
}

// componentSchema returns the lines of the document's component schema
// name (the key "    name:" under "  schemas:", up to the next key of its
// indent or less), failing the test when there is none.
func componentSchema(t *testing.T, doc []byte, name string) []string {
	t.Helper()
	var block []string
	inSchemas, in := false, false
	for _, line := range strings.Split(string(doc), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if in {
				block = append(block, line)
			}
			continue
		}
		indent := len(line) - len(trimmed)
		switch {
		case indent <= 2:
			if in {
				return block
			}
			inSchemas = line == "  schemas:"
		case inSchemas && indent == 4:
			if in {
				return block
			}
			in = strings.TrimRight(trimmed, " ") == name+":"
		case in:
			block = append(block, line)
		}
	}
	if !in {
		t.Fatalf("openapi.yaml has no component schema %q", name)
	}
	return block
}

// schemaProperties returns the names of a component schema's own
// properties (its top-level "properties:" object), in order.
func schemaProperties(block []string) []string {
	var names []string
	inProps := false
	for _, line := range block {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		switch {
		case trimmed == "":
		case indent == 6:
			inProps = strings.TrimRight(trimmed, " ") == "properties:"
		case inProps && indent == 8:
			if key, _, ok := strings.Cut(trimmed, ":"); ok {
				names = append(names, key)
			}
		}
	}
	return names
}

// flowList reads the members of a one-line YAML flow sequence ("[a, b,
// 'null']") written after key (as "key: [...]") at the start of one of
// lines, starting from index from; nil when there is none.
func flowList(lines []string, from int, key string) []string {
	for _, line := range lines[from:] {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), key+": [")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "]")
		var out []string
		for _, m := range strings.Split(rest, ",") {
			out = append(out, strings.Trim(strings.TrimSpace(m), `'"`))
		}
		return out
	}
	return nil
}

// jsonNames returns the JSON member names of a struct type's fields.
func jsonNames(v any) []string {
	var names []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// TestOpenAPIDocumentsSubscriptionFields checks that the document's
// subscription schemas hold the fields the API reads and writes: the
// resource (Subscription) requires every member the API writes, and
// SubscriptionCreate has a property for every member it reads; that the
// delivery_schema enum names every delivery schema; and that
// DeadLetterReason names every reason a delivery can end with.
func TestOpenAPIDocumentsSubscriptionFields(t *testing.T) {
	res := componentSchema(t, openAPI, "Subscription")
	required := flowList(res, 0, "required")
	for _, name := range jsonNames(subscriptionJSON{}) {
		if !slices.Contains(required, name) {
			t.Errorf("openapi.yaml: Subscription does not require %q, a member of every subscription resource", name)
		}
	}
	props := schemaProperties(res)
	for _, name := range required {
		if !slices.Contains(props, name) {
			t.Errorf("openapi.yaml: Subscription requires %q but has no such property", name)
		}
	}
	create := schemaProperties(componentSchema(t, openAPI, "SubscriptionCreate"))
	for _, name := range jsonNames(subscription.Input{}) {
		if !slices.Contains(create, name) {
			t.Errorf("openapi.yaml: SubscriptionCreate has no property %q, which POST /v1/subscriptions reads", name)
		}
	}
	for _, schema := range []string{"Subscription", "SubscriptionCreate"} {
		block := componentSchema(t, openAPI, schema)
		// The property itself (indented by eight), not a mention in an
		// if/then, up to the next property.
		at := slices.Index(block, "        delivery_schema:")
		if at < 0 {
			t.Errorf("openapi.yaml: %s has no delivery_schema property", schema)
			continue
		}
		end := at + 1
		for end < len(block) && (strings.TrimSpace(block[end]) == "" || strings.HasPrefix(block[end], "         ")) {
			end++
		}
		enum := flowList(block[:end], at, "enum")
		for _, s := range event.Schemas() {
			if !slices.Contains(enum, s) {
				t.Errorf("openapi.yaml: %s.delivery_schema's enum %v lacks %q", schema, enum, s)
			}
		}
	}
	reasons := flowList(componentSchema(t, openAPI, "DeadLetterReason"), 0, "enum")
	for _, r := range []string{retry.ReasonMaxAttempts, retry.ReasonTTL, retry.ReasonNoRetry, retry.ReasonDestinationBlocked,
		delivery.ReasonSubscriptionDeleted, delivery.ReasonRejected, "DeadLetterUndeliverable", "DeadLetterURLRemoved"} {
		if !slices.Contains(reasons, r) {
			t.Errorf("openapi.yaml: DeadLetterReason's enum %v lacks %q", reasons, r)
		}
	}
}

// yamlLine is one line of the document that is neither blank nor a
// comment: its number, indent and text without the indent.
type yamlLine struct {
	n, indent int
	text      string
}

func yamlLines(doc []byte) []yamlLine {
	var out []yamlLine
	for i, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimRight(line, " \t\r")
		trimmed := strings.TrimLeft(line, " ")
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			out = append(out, yamlLine{i + 1, len(line) - len(trimmed), trimmed})
		}
	}
	return out
}

// componentParameters reads the document's components.parameters: for
// each one's key, the query parameter name it describes ("" when it is not
// in: query).
func componentParameters(lines []yamlLine) map[string]string {
	out := map[string]string{}
	section, inParams, key := "", false, ""
	for _, l := range lines {
		switch {
		case l.indent == 0:
			section = l.text
		case section != "components:":
		case l.indent == 2:
			inParams = l.text == "parameters:"
		case !inParams:
		case l.indent == 4:
			key = strings.TrimSuffix(l.text, ":")
			out[key] = ""
		case l.indent == 6 && strings.HasPrefix(l.text, "name: "):
			out[key] = strings.TrimPrefix(l.text, "name: ") + out[key]
		case l.indent == 6 && l.text != "in: query" && strings.HasPrefix(l.text, "in: "):
			out[key] += "\x00" // not a query parameter
		}
	}
	for k, v := range out {
		if strings.Contains(v, "\x00") {
			out[k] = ""
		}
	}
	return out
}

// documentedQueryParameters reads, for every operation ("METHOD /path"),
// the names of the query parameters the document gives it: those listed
// under its parameters and its path's, inline ("- name: x" with "in:
// query") or by $ref to components.parameters.
func documentedQueryParameters(t *testing.T, doc []byte) map[string][]string {
	t.Helper()
	lines := yamlLines(doc)
	components := componentParameters(lines)
	ops := map[string][]string{}
	pathParams := map[string][]string{}
	section, path, op := "", "", ""
	listIndent := -1 // the indent of the parameters: key being read
	var inline string
	add := func(name string) {
		if op != "" {
			ops[op] = append(ops[op], name)
		} else {
			pathParams[path] = append(pathParams[path], name)
		}
	}
	for _, l := range lines {
		if listIndent >= 0 && l.indent <= listIndent {
			listIndent = -1
		}
		switch {
		case l.indent == 0:
			section = l.text
		case section != "paths:":
		case listIndent >= 0 && l.indent == listIndent+2 && strings.HasPrefix(l.text, "- "):
			entry := strings.TrimPrefix(l.text, "- ")
			inline = ""
			if ref, ok := strings.CutPrefix(entry, "$ref: "); ok {
				key := strings.TrimPrefix(strings.Trim(ref, `'"`), "#/components/parameters/")
				name, ok := components[key]
				if !ok {
					t.Errorf("openapi.yaml:%d: %s refers to no component parameter", l.n, ref)
				}
				if name != "" {
					add(name)
				}
			} else if name, ok := strings.CutPrefix(entry, "name: "); ok {
				inline = name
			}
		case listIndent >= 0 && l.indent == listIndent+4 && l.text == "in: query" && inline != "":
			add(inline)
		case l.indent == 2:
			path, op = strings.TrimSuffix(l.text, ":"), ""
		case l.indent == 4 && httpMethods[strings.TrimSuffix(l.text, ":")]:
			op = strings.ToUpper(strings.TrimSuffix(l.text, ":")) + " " + path
			ops[op] = append(ops[op], pathParams[path]...)
		case l.indent == 4 && l.text == "parameters:":
			op, listIndent = "", 4
		case l.indent == 6 && l.text == "parameters:" && op != "":
			listIndent = 6
		}
	}
	return ops
}

// TestOpenAPIDocumentsQueryParameters checks that every operation documents
// exactly the query parameters its route takes (route.params): the route's
// declaration is what checkParams lets through, so a parameter documented
// and not declared would be refused, and one declared and not documented
// would be unknown to a reader.
func TestOpenAPIDocumentsQueryParameters(t *testing.T) {
	ts := setupServer(t)
	documented := documentedQueryParameters(t, openAPI)
	if len(documented["GET /v1/deliveries"]) < 5 {
		t.Fatalf("read only %v as the query parameters of GET /v1/deliveries", documented["GET /v1/deliveries"])
	}
	for _, rt := range ts.srv.routes() {
		var declared []string
		for _, p := range rt.params() {
			declared = append(declared, p.name)
		}
		docs := documented[rt.pattern]
		for _, name := range declared {
			if !slices.Contains(docs, name) {
				t.Errorf("%s takes query parameter %s, which openapi.yaml does not document on it", rt.pattern, name)
			}
		}
		for _, name := range docs {
			if !slices.Contains(declared, name) {
				t.Errorf("openapi.yaml documents query parameter %s on %s, which the route does not take", name, rt.pattern)
			}
		}
	}
}

// cutKey splits a YAML line into its key and the rest, at the colon after
// the key: the last colon of a path key, which may hold colons of its own
// (a custom method's "/topics/{topic}:publish:"), the first of any other.
func cutKey(line string) (key, rest string, ok bool) {
	if strings.HasPrefix(line, "/") {
		if i := strings.LastIndex(line, ":"); i >= 0 {
			return line[:i], line[i+1:], true
		}
	}
	return strings.Cut(line, ":")
}
