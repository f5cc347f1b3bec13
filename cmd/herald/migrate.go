package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/store/postgres"
)

// runMigrate applies the PostgreSQL schema migrations and exits, for
// deployments that migrate before rolling out nodes (`herald serve` also
// applies them at start, under an advisory lock).
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, storeURL, timeout := newMigrateFlags(stderr)
	fromEnv, code, ok := parseFlags(fs, args, stdout, stderr, true)
	if !ok {
		return code
	}
	switch {
	case !postgres.Opens(*storeURL):
		return usageError(stderr, fs.Name(), errors.New("--store must be a postgres:// URL"), fromEnv)
	case *timeout <= 0:
		return usageError(stderr, fs.Name(), fmt.Errorf("--timeout %v: must be positive", *timeout), fromEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if err := postgres.Migrate(ctx, *storeURL, logger); err != nil {
		fmt.Fprintln(stderr, "herald migrate:", err)
		return 1
	}
	fmt.Fprintf(stdout, "schema at version %d\n", postgres.SchemaVersion())
	return 0
}

func newMigrateFlags(stderr io.Writer) (fs *flag.FlagSet, storeURL *string, timeout *time.Duration) {
	fs = flag.NewFlagSet("herald migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeURL = fs.String("store", "", "the postgres:// URL to migrate (also HERALD_STORE)")
	timeout = fs.Duration("timeout", 5*time.Minute, "give up after this long (also HERALD_TIMEOUT)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: herald migrate --store postgres://... [--timeout D]\n\nApplies the embedded PostgreSQL schema migrations (the SQLite store migrates itself at start).\n\n")
		fs.PrintDefaults()
	}
	return fs, storeURL, timeout
}
