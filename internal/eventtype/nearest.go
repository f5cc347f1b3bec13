package eventtype

import (
	"strings"

	"github.com/herald-events/herald/internal/strictjson"
)

// Nearest returns the one of names fewest edits from name
// (strictjson.EditDistance, in lower case; of equals, the first), "" when
// names is empty: the suggestion of a problem naming a type the catalog
// does not hold.
func Nearest(name string, names []string) string {
	best, bestD := "", -1
	n := strings.ToLower(name)
	for _, k := range names {
		d := strictjson.EditDistance(strings.ToLower(k), n)
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
