package eventtype

import (
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/strictjson"
)

// maxNearestWork bounds the work of one Nearest, in cells of the edit
// distance's table (the lengths of the two names multiplied, per name
// compared): about 5 ms. Without it, a type of 256 bytes refused against
// a catalog of 1,000 such names cost 150 ms of every refused publish.
const maxNearestWork = 1 << 21

// Nearest returns the one of names fewest edits from name
// (strictjson.EditDistance, in lower case; of equals, the first), "" when
// names is empty: the suggestion of a problem naming a type the catalog
// does not hold. The names are compared in order of how near their
// length is to name's, those further in length than the best distance
// found skipped, until maxNearestWork: past it the nearest of those
// compared is returned.
func Nearest(name string, names []string) string {
	n := strings.ToLower(name)
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	gap := func(i int) int { return abs(len(names[i]) - len(n)) }
	slices.SortStableFunc(order, func(a, b int) int { return gap(a) - gap(b) })
	best, bestD, work := -1, -1, 0
	for _, i := range order {
		if bestD >= 0 && (gap(i) > bestD || work > maxNearestWork) {
			break
		}
		work += len(n) * len(names[i])
		d := strictjson.EditDistance(strings.ToLower(names[i]), n)
		if bestD < 0 || d < bestD || (d == bestD && i < best) {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return ""
	}
	return names[best]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
