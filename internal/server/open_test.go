package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
)

// TestValidateStore: --store takes sqlite and postgres:// URLs; another
// value is the first error Validate reports, quoted with its password
// redacted; a malformed URL is reported after the other settings, without
// the URL.
func TestValidateStore(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Scheduling.Owner, cfg.DBStatementTimeout = "node-1", time.Minute
	for value, want := range map[string]string{
		"sqlite":                      "",
		"postgres://u:pw@h:5432/db":   "",
		"postgresql://h/db?x=1":       "",
		"mysql://u:hunter2@h/db":      `--store "mysql://u:xxxxx@h/db": want sqlite or a postgres:// URL`,
		"":                            `--store "": want sqlite or a postgres:// URL`,
		"postgres://u:hunter2@h:x/db": `--store: not a URL: invalid port ":x" after host`,
		"postgresql://u:hunter2@[::1": `--store: not a URL: missing ']' in host`,
	} {
		c := cfg
		c.Store = value
		err := c.Validate()
		if want == "" && err != nil || want != "" && (err == nil || err.Error() != want) {
			t.Errorf("--store %q: %v; want %q", value, err, want)
		}
	}
	c := cfg
	c.Store, c.DataDir = "mysql://h/db", ""
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--store ") {
		t.Errorf("an unknown store and no --data: %v; want the store's error first", err)
	}
	c.Store = "postgres://h:x/db"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--data ") {
		t.Errorf("a malformed URL and no --data: %v; want --data's error first", err)
	}
}

// TestNewRefusesUnknownStore: New, given a store no backend opens, says
// so as Validate does and opens nothing.
func TestNewRefusesUnknownStore(t *testing.T) {
	_, err := server.New(context.Background(), server.Config{Store: "mysql://u:hunter2@h/db", DataDir: t.TempDir()})
	if want := `--store "mysql://u:xxxxx@h/db": want sqlite or a postgres:// URL`; err == nil || err.Error() != want {
		t.Errorf("New: %v; want %s", err, want)
	}
}
