package main

import (
	"strings"
	"testing"
)

// TestSourceRemovalFlags: sources update --no-wrap removes a raw source's
// wrap (sent as null), so that it reads CloudEvents; --no-wrap with a
// --wrap-type is refused, and nothing changes.
func TestSourceRemovalFlags(t *testing.T) {
	base := startClientServer(t)
	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", clientTestKey)
	code, out, errOut := runHerald(t, "sources", "create", "--type", "nats", "--url", "nats://broker.example.com:4222", "--subject", "orders.>",
		"--format", "raw", "--wrap-type", "order.placed", "--wrap-source", "/shop", "-o", "json")
	if code != 0 || !strings.Contains(out, `"wrap": {`) {
		t.Fatalf("create: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	id := between(out, `"id": "`, `"`)
	code, _, errOut = runHerald(t, "sources", "update", id, "--no-wrap", "--wrap-type", "x")
	if code == 0 || !strings.Contains(errOut, "wrap") {
		t.Fatalf("--no-wrap with --wrap-type: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runHerald(t, "sources", "update", id, "--format", "cloudevents", "--no-wrap", "-o", "json")
	if code != 0 || strings.Contains(out, `"wrap"`) || !strings.Contains(out, `"format": "cloudevents"`) {
		t.Fatalf("update --no-wrap: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
}
