package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliAgainstServer starts a real Herald server for the test and returns
// write, which writes a file of the test's and returns its path, and
// herald, which runs the CLI against the server with the test's key and
// returns its exit code, stdout and stderr.
func cliAgainstServer(t *testing.T) (write func(name, body string) string, herald func(args ...string) (int, string, string)) {
	base := startClientServer(t)
	dir := t.TempDir()
	write = func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	herald = func(args ...string) (int, string, string) {
		t.Helper()
		t.Setenv("HERALD_API_KEY", clientTestKey)
		return runHerald(t, append(args, "--api", base)...)
	}
	return write, herald
}

// TestEventTypesVerbs: herald event-types create, list, get, update and
// archive against a real Herald server: a type made from --file and flags,
// a version added, a published one refused (exit 1 with the API's 409
// naming it), archived and then listed only with --include-archived.
func TestEventTypesVerbs(t *testing.T) {
	write, herald := cliAgainstServer(t)
	v1 := write("v1.json", `{"schemas": {"1": {"type": "object", "required": ["id"]}}, "examples": [{"id": "in_1"}]}`)
	v2 := write("v2.json", `{"schemas": {"2": {"type": "object", "required": ["id", "amount"]}}, "examples": [{"id": "in_1", "amount": 3}]}`)
	changed := write("changed.json", `{"schemas": {"1": {"type": "string"}}}`)
	if code, out, errOut := herald("event-types", "create", "--name", "invoice.paid", "--group", "billing", "--description", "paid", "--file", v1); code != 0 ||
		!strings.Contains(out, "invoice.paid") || !strings.Contains(out, "billing") {
		t.Fatalf("create: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := herald("event-types", "update", "invoice.paid", "--file", v2, "--deprecated", "-o", "json"); code != 0 {
		t.Fatalf("update: exit %d, %q, %q", code, out, errOut)
	} else {
		var et struct {
			Schemas    map[string]json.RawMessage
			Deprecated bool
		}
		if err := json.Unmarshal([]byte(out), &et); err != nil || len(et.Schemas) != 2 || !et.Deprecated {
			t.Errorf("update's answer %s (%v); want versions 1 and 2, deprecated", out, err)
		}
	}
	if code, out, errOut := herald("event-types", "update", "invoice.paid", "--file", changed); code != 1 || !strings.Contains(errOut, "schemas.1") {
		t.Errorf("changing version 1: exit %d, %q, %q; want exit 1 naming schemas.1", code, out, errOut)
	}
	if code, out, errOut := herald("event-types", "get", "invoice.paid", "-o", "json"); code != 0 || !strings.Contains(out, `"amount"`) {
		t.Errorf("get: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := herald("event-types", "archive", "invoice.paid"); code != 0 || !strings.Contains(out, "true") {
		t.Errorf("archive: exit %d, %q, %q", code, out, errOut)
	}
	if _, out, _ := herald("event-types", "list", "--group", "billing"); strings.Contains(out, "invoice.paid") {
		t.Errorf("list after the archive: %q; want it without invoice.paid", out)
	}
	if code, out, errOut := herald("event-types", "list", "--include-archived"); code != 0 || !strings.Contains(out, "invoice.paid") {
		t.Errorf("list --include-archived: exit %d, %q, %q", code, out, errOut)
	}
}

// TestPublishShowsSchemaErrors: herald events publish, for an account
// whose schema_validation is warn, shows the keywords of the event's
// schema errors in the SCHEMA ERRORS column (and "-" for a valid event).
func TestPublishShowsSchemaErrors(t *testing.T) {
	write, herald := cliAgainstServer(t)
	v1 := write("v1.json", `{"schemas": {"1": {"type": "object", "required": ["id"], "properties": {"n": {"minimum": 0}}}}}`)
	if code, out, errOut := herald("event-types", "create", "--name", "invoice.paid", "--file", v1); code != 0 {
		t.Fatalf("create: exit %d, %q, %q", code, out, errOut)
	}
	warn := write("warn.json", `{"settings": {"schema_validation": "warn"}}`)
	if code, out, errOut := herald("accounts", "update", "acc_default", "--file", warn); code != 0 {
		t.Fatalf("accounts update: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut := herald("events", "publish", "--type", "invoice.paid", "--source", "/b", "--payload", `{"n": -1}`)
	if code != 0 || !strings.Contains(out, "SCHEMA ERRORS") || !strings.Contains(out, "required,minimum") {
		t.Fatalf("publish of a bad event: exit %d, %q, %q; want the SCHEMA ERRORS column with required,minimum", code, out, errOut)
	}
	code, out, errOut = herald("events", "publish", "--type", "invoice.paid", "--source", "/b", "--payload", `{"id": "x"}`)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.HasSuffix(strings.TrimSpace(lines[1]), "-") {
		t.Fatalf("publish of a valid event: exit %d, %q, %q; want a row ending in -", code, out, errOut)
	}
}
