package filter

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIndexCandidatesHoldEveryMatch: for random matchers (some with a
// StringIn filter, some without, keys in data and attributes, letter case
// mixed) and random events (strings, arrays, missing keys, other types),
// every matcher an event passes is among the index's candidates, and
// matchers whose StringIn values the event's value is not in are not.
func TestIndexCandidatesHoldEveryMatch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := []string{"eu", "EU", "us", "asia", "K", "\u212a", "x y"} // K and the Kelvin sign fold alike
	pick := func() string { return words[rnd.IntN(len(words))] }
	var ms []*Matcher
	for i := 0; i < 300; i++ {
		var fs []map[string]any
		switch rnd.IntN(4) {
		case 0:
			fs = append(fs, map[string]any{"operator_type": "StringIn", "key": "data.region", "values": []string{pick(), pick()}})
		case 1:
			fs = append(fs, map[string]any{"operator_type": "StringIn", "key": "subject", "values": []string{pick()}})
		case 2:
			fs = append(fs, map[string]any{"operator_type": "StringContains", "key": "data.region", "values": []string{pick()}})
		}
		if rnd.IntN(2) == 0 {
			fs = append(fs, map[string]any{"operator_type": "StringNotIn", "key": "data.region", "values": []string{pick()}})
		}
		raw, _ := json.Marshal(fs)
		m, err := Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	ix := NewIndex(idx, func(i int) *Matcher { return ms[i] })
	if !ix.Indexed() {
		t.Fatal("no matcher was indexed")
	}
	for n := 0; n < 500; n++ {
		var region any
		switch rnd.IntN(4) {
		case 0:
			region = pick()
		case 1:
			region = []any{pick(), 3, pick()}
		case 2:
			region = 7
		}
		data := map[string]any{}
		if region != nil {
			data["region"] = region
		}
		ev := map[string]any{"specversion": "1.0", "id": fmt.Sprint(n), "source": "/s", "type": "t", "subject": pick(), "data": data}
		payload, _ := json.Marshal(ev)
		e := NewEvent(payload)
		cand := map[int]bool{}
		for i := range ix.Candidates(e) {
			if cand[i] {
				t.Fatalf("event %s: matcher %d is a candidate twice", payload, i)
			}
			cand[i] = true
		}
		for i, m := range ms {
			if m.Match(e) && !cand[i] {
				t.Fatalf("event %s passes matcher %d but is not a candidate", payload, i)
			}
			if c := m.stringIn(); c != nil && cand[i] {
				if o, _ := c.eval(e); o != passed {
					t.Fatalf("event %s: matcher %d is a candidate though its StringIn fails", payload, i)
				}
			}
		}
	}
}
