package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/store/sqlrow"
)

// TestEndpointIDsKeyed: endpoint IDs are keyed per installation: two
// databases make different IDs of one URL, neither the unkeyed hash of
// earlier releases, and a database makes the same IDs after it is opened
// again.
func TestEndpointIDsKeyed(t *testing.T) {
	const url = "https://usr:pw@a.example/hook"
	dir := t.TempDir()
	a, b := open(t, filepath.Join(dir, "a", "herald.db")), open(t, filepath.Join(dir, "b", "herald.db"))
	idA, idB := a.EndpointID("", url), b.EndpointID("", url)
	if idA == idB || idA == sqlrow.LegacyEndpointID("", url) || !strings.HasPrefix(idA, "ep_") || len(idA) != 23 {
		t.Fatalf("the IDs of one URL in two installations: %s and %s (the unkeyed one: %s)", idA, idB, sqlrow.LegacyEndpointID("", url))
	}
	if a.EndpointID("acc_other", url) == idA || a.EndpointID("", url+"x") == idA || a.EndpointID("acc_default", url) != idA {
		t.Fatal("an endpoint ID is not one per account and URL")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if again := open(t, filepath.Join(dir, "a", "herald.db")).EndpointID("", url); again != idA {
		t.Fatalf("the ID after a reopen: %s, want %s", again, idA)
	}
}
