package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/store/storetest"
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

// TestEndpointRekeyIsAtomic: a schema-10 database the re-keying fails on
// (a subscription whose delivery options are not JSON) is left as it was:
// schema 10, no key, the old IDs. Once the row is mended, the upgrade
// goes through.
func TestEndpointRekeyIsAtomic(t *testing.T) {
	path := writeVersion(t, 10, storetest.V10Data+
		`UPDATE subscriptions SET delivery = 'not JSON' WHERE id = 'sub_v10x';`)
	if _, err := Open(context.Background(), path, Options{}); err == nil || !strings.Contains(err.Error(), "0011_endpoint_key.sql") {
		t.Fatalf("Open of a database the re-keying fails on: %v", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, keys int
	var ep string
	if err := db.QueryRow(`SELECT MAX(version), (SELECT COUNT(*) FROM sqlite_master WHERE name = 'installation_keys'),
		(SELECT endpoint_id FROM subscriptions WHERE id = 'sub_v10') FROM schema_version`).Scan(&version, &keys, &ep); err != nil {
		t.Fatal(err)
	}
	if version != 10 || keys != 0 || ep != "ep_80xd22q4hn06sbmty17h" {
		t.Fatalf("after a failed re-keying: schema %d, %d key tables, sub_v10 on %s; want 10, none, its old ID", version, keys, ep)
	}
	if _, err := db.Exec(`UPDATE subscriptions SET delivery = '{}' WHERE id = 'sub_v10x'`); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	if sub, err := s.GetSubscription(context.Background(), "sub_v10"); err != nil || sub.EndpointID != s.EndpointID("", sub.URL) {
		t.Fatalf("sub_v10 after the upgrade: %+v, %v", sub, err)
	}
}
