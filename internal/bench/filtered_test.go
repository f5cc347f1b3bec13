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
