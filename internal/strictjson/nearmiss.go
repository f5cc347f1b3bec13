package strictjson

import "strings"

// Closest returns the one of known that name is most likely a misspelling
// of, or "": the same name in other letter case or without '_' and '-'
// ("eventTypes" for event_types), else one within an edit or two
// (EditDistance: one for a name of 4 to 7 letters, two from 8; "event_type"
// for event_types, "timout" for timeout), else, for a known name of 4
// letters or more, one that holds it ("subscription_name" for name).
func Closest(name string, known []string) string {
	n := fold(name)
	if n == "" || len(n) > 128 {
		return ""
	}
	best, bestD := "", 3
	for _, k := range known {
		if fold(k) == n {
			return k
		}
		if d := EditDistance(fold(k), n); d < bestD && d <= maxEdits(len(fold(k))) {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	for _, k := range known {
		if f := fold(k); len(f) >= 4 && strings.Contains(n, f) {
			return k
		}
	}
	return ""
}

// maxEdits is how many edits a name of n letters may be away from what it
// is taken for.
func maxEdits(n int) int {
	switch {
	case n >= 8:
		return 2
	case n >= 4:
		return 1
	}
	return 0
}

// fold is a name lowercased without '_' and '-'.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// EditDistance is the optimal string alignment distance of a and b,
// compared byte by byte: the fewest bytes inserted, deleted, changed, or
// two neighbours swapped, that make one the other.
func EditDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
