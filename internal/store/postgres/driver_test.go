package postgres

import (
	"testing"

	"github.com/herald-events/herald/internal/store/drivertest"
)

// TestQueries: queries/*.sql hold exactly the engine's statements.
func TestQueries(t *testing.T) { drivertest.CheckQueries(t, queries) }

// TestDriver: drivertest.Run on a fresh schema.
func TestDriver(t *testing.T) {
	drivertest.Run(t, pgDriver{openAt(t, freshSchema(t), Options{}).backend})
}
