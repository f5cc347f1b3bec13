package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/drivertest"
)

// TestQueries: queries/*.sql hold exactly the engine's statements, their
// parameters numbered as written (before positional).
func TestQueries(t *testing.T) {
	drivertest.CheckQueries(t, driver.MustParseQueries(queryFiles, "queries"))
}

// TestDriver: drivertest.Run on a new database.
func TestDriver(t *testing.T) {
	drivertest.Run(t, sqliteDriver{open(t, filepath.Join(t.TempDir(), "herald.db")).backend})
}
