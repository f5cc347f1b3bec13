package filter

import (
	"encoding/json"
	"testing"
)

// BenchmarkMatch: 25 filters that all pass (so all are evaluated) against
// one parsed event: the per-subscription cost of matching.
func BenchmarkMatch(b *testing.B) {
	m, err := Compile(json.RawMessage(benchFilters))
	if err != nil {
		b.Fatal(err)
	}
	ev := NewEvent([]byte(benchEvent))
	if !m.Match(ev) {
		b.Fatal("no match")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !m.Match(ev) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkMatchNewEvent: the same with a new event every time: the
// parse, paid once per event however many subscriptions read it.
func BenchmarkMatchNewEvent(b *testing.B) {
	m, err := Compile(json.RawMessage(benchFilters))
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(benchEvent)
	b.ReportAllocs()
	for b.Loop() {
		if !m.Match(NewEvent(payload)) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkCompile: compiling 25 filters (done once per subscription, when
// the catalog loads it).
func BenchmarkCompile(b *testing.B) {
	raw := json.RawMessage(benchFilters)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(raw); err != nil {
			b.Fatal(err)
		}
	}
}
