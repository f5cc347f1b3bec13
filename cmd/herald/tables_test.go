package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/server/servertest"
)

// TestTablesShowWhatChanged: against a real server whose receiver (on
// 127.0.0.1) fails every push, endpoints update --per-second 2 --burst 1
// prints the endpoint with its new rate limit; a frozen endpoint's
// pending delivery lists as held by endpoint_frozen with no next attempt,
// and a deactivated subscription's queued one as held by
// subscription_deactivated; a subscription looked up by its name instead
// of its id is refused naming the CLI's command as well as the API's
// route.
func TestTablesShowWhatChanged(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(down.Close)
	base := servertest.Start(t, server.Config{AdminKey: clientTestKey,
		Attempting: attempting.Config{Destinations: destination.Policy{AllowPrivate: true}}})
	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", clientTestKey)
	sub := apiCall(t, base, "/v1/subscriptions", "application/json", `{"name":"puller","url":"`+down.URL+`/hook"}`, http.StatusCreated)
	publishOrder(t, base, "o-1")
	_, got, _ := runHerald(t, "subscriptions", "get", sub, "-o", "json")
	ep := between(got, `"endpoint_id": "`, `"`)

	code, out, errOut := runHerald(t, "endpoints", "update", ep, "--per-second", "2", "--burst", "1")
	if code != 0 || !hasRow(out, ep, "2", "1") || !strings.Contains(out, "RATE/S") {
		t.Fatalf("endpoints update: exit %d, stdout %q, stderr %q; want the endpoint with RATE/S 2 and BURST 1", code, out, errOut)
	}
	runHerald(t, "endpoints", "freeze", ep)
	code, out, errOut = runHerald(t, "deliveries", "list", "--subscription", sub)
	if code != 0 || !strings.Contains(out, "NEXT ATTEMPT") || !strings.Contains(out, "HELD BY") || !hasRow(out, "pending", "endpoint_frozen") {
		t.Fatalf("deliveries list: exit %d, stdout %q, stderr %q; want the delivery pending, held by endpoint_frozen", code, out, errOut)
	}
	runHerald(t, "subscriptions", "deactivate", sub)
	if _, out, _ = runHerald(t, "deliveries", "list", "--subscription", sub); !hasRow(out, "queued", "subscription_deactivated") {
		t.Fatalf("deliveries list after deactivate: %q; want the delivery queued, held by subscription_deactivated", out)
	}

	code, _, errOut = runHerald(t, "subscriptions", "get", "puller")
	if code != 1 || !strings.Contains(errOut, "GET /v1/subscriptions?name=puller") || !strings.Contains(errOut, "(herald subscriptions list --name puller)") {
		t.Fatalf("subscriptions get puller: exit %d, stderr %q; want the route and the command", code, errOut)
	}
}

// hasRow reports whether a line of a table holds each of cells as a
// whole word.
func hasRow(table string, cells ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		words, all := strings.Fields(line), true
		for _, c := range cells {
			found := false
			for _, w := range words {
				found = found || w == c
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}

// between returns the text of s after the first from, up to the next to.
func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}

// TestCustomRetryPolicyFlags: subscriptions create takes a custom retry
// policy from flags, --delay repeated and separated by commas, with
// --ttl and --max-attempts, and the server stores that policy; a bad
// delay is one line naming --delay.
func TestCustomRetryPolicyFlags(t *testing.T) {
	base := startClientServer(t)
	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", clientTestKey)
	code, out, errOut := runHerald(t, "subscriptions", "create", "--name", "custom", "--delivery-mode", "pull",
		"--retry-preset", "custom", "--delay", "10s,1m", "--delay", "5m", "--ttl", "1h", "--max-attempts", "5", "-o", "json")
	var got struct {
		RetryPolicy struct {
			Preset      string
			Delays      []string
			MaxAttempts int `json:"max_attempts"`
			TTL         string
		} `json:"retry_policy"`
	}
	_ = json.Unmarshal([]byte(out), &got)
	if p := got.RetryPolicy; code != 0 || p.Preset != "custom" || strings.Join(p.Delays, " ") != "10s 1m0s 5m0s" || p.MaxAttempts != 5 || p.TTL != "1h0m0s" {
		t.Fatalf("create with --delay: exit %d, retry_policy %+v, stderr %q; want custom, delays 10s 1m 5m, 5 attempts, ttl 1h", code, p, errOut)
	}
	code, _, errOut = runHerald(t, "subscriptions", "create", "--name", "bad", "--delivery-mode", "pull", "--retry-preset", "custom", "--delay", "10s,soon")
	if first, rest, _ := strings.Cut(errOut, "\n"); code != 2 || !strings.Contains(first, "-delay") || rest != "" {
		t.Fatalf("a bad --delay: exit %d, stderr %q; want exit 2 and one line naming --delay", code, errOut)
	}
}
