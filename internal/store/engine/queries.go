package engine

import (
	"sort"

	"github.com/herald-events/herald/internal/store/driver"
)

// queries are the names of every statement the engine runs (query).
var queries = map[driver.Query]bool{}

// query names a statement a driver must hold; it is called once per name,
// in a package-level variable, so that Queries knows every name before
// any store is opened.
func query(name string) driver.Query {
	q := driver.Query(name)
	queries[q] = true
	return q
}

// Queries returns the name of every statement the engine runs, sorted: a
// driver's queries/*.sql files hold exactly these (each driver's tests
// check it).
func Queries() []driver.Query {
	names := make([]driver.Query, 0, len(queries))
	for q := range queries {
		names = append(names, q)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
