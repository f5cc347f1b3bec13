package bench

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	herald "github.com/herald-events/herald/internal/server"
)

func TestFilteredScenarioRegistered(t *testing.T) {
	if !slices.Contains(Scenarios, "fanout-filtered") || scenarioFuncs["fanout-filtered"] == nil || !strings.Contains(ScenarioHelp(), "never match") {
		t.Error("fanout-filtered is not in all, registered, or described")
	}
	all, err := ParseScenarios("all")
	if err != nil || !slices.Contains(all, "fanout-filtered") {
		t.Errorf("all: %v, %v", all, err)
	}
	if d := defaultTimeout("fanout-filtered", DefaultSizes()); d < 4*time.Minute {
		t.Errorf("fanout-filtered's deadline %v: two runs of steady-batch's load", d)
	}
}

// TestFilteredFilters: the bench's filtered events, as stored, match
// filteredHit and none of filteredMiss; the data keeps its size.
func TestFilteredFilters(t *testing.T) {
	for _, size := range []int{0, 512, 4096} {
		d := filteredData(size)
		if !json.Valid(d) || (size >= 64 && len(d) != size) {
			t.Fatalf("filteredData(%d): %d bytes, valid %v", size, len(d), json.Valid(d))
		}
	}
	l := &load{prefix: "ff.x-", events: 10, batch: 1, data: filteredData(512), typeOf: typeName}
	h := http.Header{}
	h.Set("Content-Type", "application/cloudevents+json")
	evs, err := event.Parse(h, l.body(nil, 3, 4, time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := evs[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hit, err := filter.Compile(json.RawMessage(filteredHit))
	if err != nil {
		t.Fatal(err)
	}
	if !hit.Match(filter.NewEvent(stored)) {
		t.Errorf("filteredHit does not match %s", stored)
	}
	for _, i := range []int{0, 999} {
		miss, err := filter.Compile(filteredMiss(i))
		if err != nil {
			t.Fatal(err)
		}
		if miss.Match(filter.NewEvent(stored)) {
			t.Errorf("filteredMiss(%d) matches %s", i, stored)
		}
	}
}

// TestFilteredRequestFarUnderTheMatchBudget: matching a request of the
// fanout-filtered scenario (--batch events of --payload bytes against its
// filteredMisses subscriptions, indexed by their StringIn filter as the
// catalog indexes them, and the hit) costs a few filter tests an event,
// thousands of times less than --max-match-work's default: ordinary
// traffic never meets the budget.
func TestFilteredRequestFarUnderTheMatchBudget(t *testing.T) {
	s := DefaultSizes()
	ms := []*filter.Matcher{mustCompileFilter(t, json.RawMessage(filteredHit))}
	for i := range filteredMisses {
		ms = append(ms, mustCompileFilter(t, filteredMiss(i)))
	}
	ix := filter.NewIndex(ms, func(m *filter.Matcher) *filter.Matcher { return m })
	l := &load{prefix: "ff.x-", events: s.Batch, batch: s.Batch, data: filteredData(s.PayloadBytes), typeOf: typeName}
	h := http.Header{}
	h.Set("Content-Type", "application/cloudevents-batch+json")
	evs, err := event.Parse(h, l.body(nil, 0, s.Batch, time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	tests, matched := 0, 0
	for _, ev := range evs {
		stored, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		fev := filter.NewEvent(stored)
		for m := range ix.Candidates(fev) {
			fev.Charge(1) // as catalog.Snapshot.Match charges a candidate
			if m.Match(fev) {
				matched++
			}
		}
		tests += fev.Tested()
	}
	t.Logf("a request of %d events: %d filter tests (--max-match-work's default: %d)", len(evs), tests, herald.DefaultMaxMatchWork)
	if matched != len(evs) || tests > 10*len(evs) || tests*1000 > herald.DefaultMaxMatchWork {
		t.Fatalf("%d events matched %d times at %d filter tests; want each once, a few tests an event, far under %d",
			len(evs), matched, tests, herald.DefaultMaxMatchWork)
	}
}

func mustCompileFilter(t *testing.T, raw json.RawMessage) *filter.Matcher {
	t.Helper()
	m, err := filter.Compile(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
