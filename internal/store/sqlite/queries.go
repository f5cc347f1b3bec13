package sqlite

import (
	"regexp"
	"strconv"

	"github.com/herald-events/herald/internal/store/driver"
)

// numbered matches a numbered parameter (?1).
var numbered = regexp.MustCompile(`\?([0-9]+)`)

// positional rewrites each statement of qs whose numbered parameters
// appear once each, in order (?1, ?2, …), with anonymous ones (?), which
// SQLite numbers the same way: the SQLite driver looks up the name of a
// numbered parameter at every bind, which cost the writer an eighth of
// its time in a rows statement. Other statements stay as written.
func positional(qs driver.Queries) driver.Queries {
	for name, text := range qs {
		ms := numbered.FindAllStringSubmatch(text, -1)
		inOrder := len(ms) > 0
		for i, m := range ms {
			if n, _ := strconv.Atoi(m[1]); n != i+1 {
				inOrder = false
				break
			}
		}
		if inOrder {
			qs[name] = numbered.ReplaceAllString(text, "?")
		}
	}
	return qs
}
