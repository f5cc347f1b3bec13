package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/herald-events/herald/internal/store/postgres"
)

// runMigrate applies the PostgreSQL schema migrations and exits, for
// deployments that migrate before rolling out nodes (`herald serve` also
// applies them at start, under an advisory lock).
func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeURL := fs.String("store", "", "the postgres:// URL to migrate (also HERALD_STORE)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: herald migrate --store postgres://...\n\nApplies the embedded PostgreSQL schema migrations (the SQLite store migrates itself at start).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := applyEnv(fs); err != nil {
		fmt.Fprintln(stderr, "herald migrate:", err)
		return 2
	}
	if !strings.HasPrefix(*storeURL, "postgres://") && !strings.HasPrefix(*storeURL, "postgresql://") {
		fmt.Fprintln(stderr, "herald migrate: --store must be a postgres:// URL")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
