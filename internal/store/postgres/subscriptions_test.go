package postgres

import (
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/store/driver"
)

// TestNotifyStatements: the engine's notifications name the channels and
// kinds the change feed listens for (changes.go).
func TestNotifyStatements(t *testing.T) {
	for name, want := range map[string][]string{
		"NotifyCatalog": {"'" + changeChannel + "'", "' " + changedCatalog + "'", "current_schema()"},
		"BumpEndpoints": {"'" + changeChannel + "'", "' " + changedEndpoints + "'", "current_schema()"},
		"NotifyQueued":  {"'" + queuedChannel + "'", "current_schema() || ' ' || id"},
	} {
		for _, w := range want {
			if q := queries[driver.Query(name)]; !strings.Contains(q, w) {
				t.Errorf("%s lacks %q: %s", name, w, q)
			}
		}
	}
}
