package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpressionFlags: subscriptions create takes --filter-expression and
// --transform; herald filter test then says whether an event matches and
// prints the body a push would carry after the transform, or that the
// expression refused it; a bad expression is the server's 400 naming the
// field.
func TestExpressionFlags(t *testing.T) {
	base := startClientServer(t)
	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", clientTestKey)
	code, out, errOut := runHerald(t, "subscriptions", "create", "--name", "chat", "--url", "https://example.com/hook",
		"--filter-expression", "data.amount > 100.0", "--transform", `{"text": "paid " + string(data.amount)}`, "-o", "json")
	if code != 0 || !strings.Contains(out, `"filter_expression": "data.amount \u003e 100.0"`) && !strings.Contains(out, `"filter_expression": "data.amount > 100.0"`) {
		t.Fatalf("create: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	sub := between(out, `"id": "`, `"`)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.json", `{"specversion":"1.0","id":"e1","source":"/s","type":"t","data":{"amount":150}}`)
	small := write("small.json", `{"specversion":"1.0","id":"e2","source":"/s","type":"t","data":{"amount":5}}`)
	code, out, errOut = runHerald(t, "filter", "test", sub, "--event", big)
	if code != 0 || !strings.Contains(out, "delivered (application/cloudevents+json):") || !strings.Contains(out, `"data":{"text":"paid 150"}`) {
		t.Fatalf("filter test of a matching event: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runHerald(t, "filter", "test", sub, "--event", small)
	if code != 1 || !strings.Contains(out, "filter_expression is false") {
		t.Fatalf("filter test of an event the expression refuses: exit %d, stdout %q", code, out)
	}
	code, _, errOut = runHerald(t, "subscriptions", "update", sub, "--transform", "data +")
	if code != 1 || !strings.Contains(errOut, "transform.cel") || !strings.Contains(errOut, "Syntax error") {
		t.Fatalf("a bad --transform: exit %d, stderr %q; want the 400 naming transform.cel", code, errOut)
	}
}
