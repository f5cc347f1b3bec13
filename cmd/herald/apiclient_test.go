package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/server/servertest"
)

// clientTestKey is the admin key of the server startClientServer starts.
const clientTestKey = "cli-test-admin-key-0123456789"

// startClientServer starts a Herald server (servertest.Start), its API on
// 127.0.0.1, with clientTestKey as its admin key, and returns its base URL.
func startClientServer(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, server.Config{AdminKey: clientTestKey})
}

// apiCall sends body to the API at base with clientTestKey and fails the
// test unless it answers want; it returns the answer's id member.
func apiCall(t *testing.T, base, path, contentType, body string, want int) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientTestKey)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ ID string }
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, raw.String(), want)
	}
	_ = json.Unmarshal(raw.Bytes(), &out)
	return out.ID
}

// publishOrder publishes an order.created event with the id given.
func publishOrder(t *testing.T, base, id string) {
	t.Helper()
	apiCall(t, base, "/v1/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"`+id+`","source":"/shop","type":"order.created","data":{}}`, http.StatusAccepted)
}

// runHerald runs herald with args and returns its exit status, stdout and
// stderr.
func runHerald(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestClientCommandsReadTheEnvironment: herald pull and herald filter test
// call the API that --api names, else HERALD_API, with the key in
// HERALD_API_KEY, else the admin key in --data's admin.key; a bad
// HERALD_API is refused naming the variable, a wrong key gets the server's
// 401. Each run is against a real Herald server: the --data given has no
// admin.key unless the case puts one there, and HERALD_API, when --api
// wins, names a port nothing listens on. Not parallel: it sets the
// environment.
func TestClientCommandsReadTheEnvironment(t *testing.T) {
	base := startClientServer(t)
	sub := apiCall(t, base, "/v1/subscriptions", "application/json",
		`{"name":"orders","delivery_mode":"pull","event_types":["order.created"]}`, http.StatusCreated)
	noKey := t.TempDir()
	withKey := t.TempDir()
	if err := os.WriteFile(filepath.Join(withKey, server.AdminKeyFile), []byte(clientTestKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	matching, other := filepath.Join(dir, "order.json"), filepath.Join(dir, "refund.json")
	for file, typ := range map[string]string{matching: "order.created", other: "refund.created"} {
		ev := `{"specversion":"1.0","id":"e-1","source":"/shop","type":"` + typ + `"}`
		if err := os.WriteFile(file, []byte(ev), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const dead = "http://127.0.0.1:1"

	pulls := []struct {
		name, api, key string
		args           []string
	}{
		{"HERALD_API and HERALD_API_KEY", base, clientTestKey, []string{"--data", noKey}},
		{"--api over HERALD_API", dead, clientTestKey, []string{"--data", noKey, "--api", base}},
		{"admin.key without HERALD_API_KEY", base, "", []string{"--data", withKey}},
	}
	pulls = append(pulls, struct {
		name, api, key string
		args           []string
	}{"admin.key in HERALD_DATA", base, "", nil})
	for i, c := range pulls {
		t.Setenv("HERALD_API", c.api)
		t.Setenv("HERALD_API_KEY", c.key)
		t.Setenv("HERALD_DATA", withKey)
		id := "o-" + string(rune('1'+i))
		publishOrder(t, base, id)
		args := append([]string{"pull", sub, "--count", "1", "--max-wait", "10s"}, c.args...)
		code, out, errOut := runHerald(t, args...)
		if code != 0 || !strings.Contains(out, "id="+id) || errOut != "" {
			t.Errorf("%s: herald %q: exit %d, stdout %q, stderr %q; want exit 0 and event %s", c.name, args, code, out, errOut, id)
		}
	}

	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", clientTestKey)
	for _, c := range []struct {
		event string
		code  int
		want  string
	}{
		{matching, 0, "matches: the event would go to " + sub},
		{other, 1, "does not match"},
	} {
		code, out, errOut := runHerald(t, "filter", "test", sub, "--event", c.event, "--data", noKey)
		if code != c.code || !strings.Contains(out, c.want) || errOut != "" {
			t.Errorf("herald filter test --event %s: exit %d, stdout %q, stderr %q; want exit %d and %q", filepath.Base(c.event), code, out, errOut, c.code, c.want)
		}
	}

	for _, args := range [][]string{
		{"pull", sub, "--count", "1", "--max-wait", "0s", "--data", withKey},
		{"filter", "test", sub, "--event", matching, "--data", withKey},
	} {
		// A wrong HERALD_API_KEY is sent, not passed over for admin.key.
		t.Setenv("HERALD_API_KEY", "wrong-key-0123456789abcdef")
		if code, _, errOut := runHerald(t, args...); code != 1 || !strings.Contains(errOut, "401") {
			t.Errorf("herald %q with a wrong HERALD_API_KEY: exit %d, stderr %q; want exit 1 and the server's 401", args, code, errOut)
		}
		t.Setenv("HERALD_API", "ftp://"+strings.TrimPrefix(base, "http://"))
		code, out, errOut := runHerald(t, args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != 2 || out != "" || !strings.Contains(first, "--api") || !strings.Contains(first, "HERALD_API=") {
			t.Errorf("herald %q with HERALD_API=ftp://…: exit %d, stderr %q; want exit 2 naming --api and HERALD_API", args, code, errOut)
		}
		t.Setenv("HERALD_API", base)
	}
}

// TestDefaultAPIIsServesAddress: without --api or HERALD_API a client
// command calls herald serve at its default --addr (serve.go keeps that
// default in its flag list; defaultAPI must follow it).
func TestDefaultAPIIsServesAddress(t *testing.T) {
	fs, _ := newServeFlags(io.Discard)
	if want := defaultPublicURL(fs.Lookup("addr").DefValue, false); defaultAPI != want {
		t.Errorf("defaultAPI is %s, herald serve listens at %s by default", defaultAPI, want)
	}
}
