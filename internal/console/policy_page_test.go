package console_test

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/retry"
)

// timetableList matches a subscription page's retry policy timetable and
// the note after it; timetableItem an attempt's time in it.
var (
	timetableList = regexp.MustCompile(`(?s)<ol class="timetable" id="timetable">(.*?)</ol>\s*<span class="note">(.*?)</span>`)
	timetableItem = regexp.MustCompile(`<li>([^<]*)</li>`)
)

// decidedOffsets returns when each attempt of spec's policy goes, counted
// from the first, when every attempt fails at once with no response
// (status 0): what internal/retry decides attempt by attempt
// (Policy.Decide, no jitter), in retry.Human's words, until it decides
// anything but a retry.
func decidedOffsets(t *testing.T, spec retry.Spec) []string {
	t.Helper()
	p, err := retry.Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	out, now := []string{"0s"}, start
	for n := 1; ; n++ {
		v := p.Decide(retry.Attempt{Number: n, Start: start, FirstFailure: start, Now: now}, nil)
		if v.Kind != retry.Retry {
			return out
		}
		now = v.At
		out = append(out, retry.Human(now.Sub(start)))
	}
}

// TestSubscriptionPageTimetable: a subscription's page shows its retry
// policy as its timetable: when each attempt goes, counted from the first
// as if each failed at once, as internal/retry decides them for the
// policy attempt by attempt when each fails with no response; what
// follows the last; and what the times do not show (eventgrid's jitter
// and per-code minimum delays). A custom schedule (its delays added up:
// 0s, 10s, 1m10s, 6m10s, then dead-lettered by max_attempts), the sap
// preset (its retries run out into a queue) and the default (eventgrid:
// its ttl ends it).
func TestSubscriptionPageTimetable(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	_, _, key := n.tenant("shop", "account")
	a := signInAs(n, key)
	for _, c := range []struct {
		name, policy string
		want         []string // "": as decided
		end          string
	}{
		{"custom", `{"preset": "custom", "delays": ["10s", "1m", "5m"], "max_attempts": 4}`, []string{"0s", "10s", "1m10s", "6m10s"},
			"after attempt 4 fails, it is dead-lettered (" + retry.ReasonMaxAttempts + ")."},
		{"sap", `{"preset": "sap"}`, nil, "after attempt 6 fails, the subscription is deactivated and its deliveries queued; retries anchored to the first failure."},
		{"default", `{}`, nil, "after attempt 11 fails, it is dead-lettered (" + retry.ReasonTTL + ": the next retry would pass the ttl of 24h); " +
			"jitter ±5% (not shown); minimum delay 408 ≥ 2m, 503 ≥ 30s, others ≥ 10s."},
	} {
		var spec retry.Spec
		if err := json.Unmarshal([]byte(c.policy), &spec); err != nil {
			t.Fatal(err)
		}
		decided := decidedOffsets(t, spec)
		if c.want != nil && !slices.Equal(decided, c.want) {
			t.Fatalf("%s: internal/retry decides %v; want %v", c.name, decided, c.want)
		}
		body := map[string]any{"name": c.name, "url": rc.URL + "/" + c.name}
		if c.policy != "{}" {
			body["retry_policy"] = json.RawMessage(c.policy)
		}
		sub := n.must(http.StatusCreated, key, "POST", "/v1/subscriptions", body)["id"].(string)
		p := n.get("/console/subscriptions/"+sub, a.cookie)
		list := timetableList.FindStringSubmatch(p.body)
		if p.status != http.StatusOK || list == nil {
			t.Fatalf("%s: %d, no timetable:\n%s", c.name, p.status, p.body)
		}
		var shown []string
		for _, m := range timetableItem.FindAllStringSubmatch(list[1], -1) {
			shown = append(shown, html.UnescapeString(m[1]))
		}
		if !slices.Equal(shown, decided) {
			t.Errorf("%s: the page's timetable is %v; internal/retry decides %v", c.name, shown, decided)
		}
		if note := html.UnescapeString(list[2]); note != c.end {
			t.Errorf("%s: after the timetable the page says %q; want %q", c.name, note, c.end)
		}
	}
}
