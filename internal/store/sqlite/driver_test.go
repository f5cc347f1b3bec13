package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/herald-events/herald/internal/store/drivertest"
)

// TestQueries: queries/*.sql hold exactly the engine's statements.
func TestQueries(t *testing.T) { drivertest.CheckQueries(t, queries) }

// TestDriver: drivertest.Run on a new database.
func TestDriver(t *testing.T) {
	drivertest.Run(t, sqliteDriver{open(t, filepath.Join(t.TempDir(), "herald.db")).backend})
}
