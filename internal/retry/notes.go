package retry

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Notes describes what a timetable (Timetable) does not show of p: its
// anchoring, its jitter and its per-code minimum delays, in words
// ("jitter ±5% (not shown); minimum delay 408 ≥ 2m, 503 ≥ 30s, others ≥
// 10s"), or "" when p has none of them. herald policy show and the
// console's subscription page print it under the timetable.
func (p Policy) Notes() string {
	var notes []string
	if p.Schedule.Anchored {
		notes = append(notes, "retries anchored to the first failure")
	}
	if p.Jitter > 0 {
		notes = append(notes, fmt.Sprintf("jitter ±%s%% (not shown)", strconv.FormatFloat(p.Jitter*100, 'f', -1, 64)))
	}
	if len(p.MinDelays) > 0 || p.MinDelay > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(p.MinDelays)) {
			parts = append(parts, fmt.Sprintf("%d ≥ %s", c, Human(p.MinDelays[c])))
		}
		if p.MinDelay > 0 {
			parts = append(parts, "others ≥ "+Human(p.MinDelay))
		}
		notes = append(notes, "minimum delay "+strings.Join(parts, ", "))
	}
	return strings.Join(notes, "; ")
}
