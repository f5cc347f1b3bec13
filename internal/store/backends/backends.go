// Package backends registers the store backends Herald ships with
// store.Open: the embedded SQLite store ("sqlite") and PostgreSQL
// (postgres:// and postgresql:// URLs). A program that opens a store by
// its --store value imports it for that effect:
//
//	import _ "github.com/herald-events/herald/internal/store/backends"
package backends

import (
	_ "github.com/herald-events/herald/internal/store/postgres" // registers postgres:// URLs
	_ "github.com/herald-events/herald/internal/store/sqlite"   // registers "sqlite"
)
