package client

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// openAPIPath is the API's description the client is held to. It is in
// the server's module, read by path from Herald's source tree: the client
// module does not require the server's.
const openAPIPath = "../internal/api/openapi.yaml"

// serverGoMod is the server module's go.mod, beside the client's directory
// in Herald's source tree and absent where the client module stands alone
// (downloaded into a module cache).
const serverGoMod = "../go.mod"

// node is a decoded YAML value of the document.
type node = map[string]any

// loadOpenAPI decodes internal/api/openapi.yaml.
func loadOpenAPI(t *testing.T) node {
	t.Helper()
	b, err := os.ReadFile(openAPIPath)
	if err != nil {
		if _, modErr := os.Stat(serverGoMod); errors.Is(err, fs.ErrNotExist) && errors.Is(modErr, fs.ErrNotExist) {
			t.Skipf("%s: not in Herald's source tree (the client module alone): the checks against the API's description run there", openAPIPath)
		}
		t.Fatal(err)
	}
	var doc node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", openAPIPath, err)
	}
	return doc
}

// docOp is one /v1 operation of the document.
type docOp struct {
	method, path string
	query        []string // query parameter names, sorted
	hasBody      bool     // it has a requestBody
	bodyRequired bool
	public       bool // security: []
}

// v1Operations returns the document's operations whose path starts with
// /v1/, keyed "METHOD /path".
func v1Operations(doc node) map[string]docOp {
	ops := map[string]docOp{}
	for path, item := range doc["paths"].(node) {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		item := item.(node)
		common := paramNames(doc, item["parameters"])
		for method, o := range item {
			if !httpMethods[method] {
				continue
			}
			o := o.(node)
			op := docOp{method: strings.ToUpper(method), path: path}
			op.query = append(append(op.query, common...), paramNames(doc, o["parameters"])...)
			slices.Sort(op.query)
			if rb, ok := o["requestBody"].(node); ok {
				op.hasBody = true
				op.bodyRequired, _ = rb["required"].(bool)
			}
			if sec, ok := o["security"].([]any); ok && len(sec) == 0 {
				op.public = true
			}
			ops[op.method+" "+path] = op
		}
	}
	return ops
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true, "trace": true}

// paramNames returns the names of the query parameters in list (a YAML
// sequence of parameter objects or $refs).
func paramNames(doc node, list any) []string {
	var names []string
	items, _ := list.([]any)
	for _, p := range items {
		p := resolve(doc, p.(node))
		if p["in"] == "query" {
			names = append(names, p["name"].(string))
		}
	}
	return names
}

// resolve follows n's $ref, if any ("#/components/schemas/X", or a JSON
// pointer deeper into the document), until a node without one.
func resolve(doc node, n node) node {
	for range 32 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(node)[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
		}
		n = cur.(node)
	}
	panic("a $ref cycle in openapi.yaml")
}

// schemaName returns the component schema name of a $ref node, or "".
func schemaName(n node) string {
	ref, _ := n["$ref"].(string)
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok || strings.Contains(name, "/") {
		return ""
	}
	return name
}
