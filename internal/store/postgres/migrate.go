package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step. Files are named NNNN_name.sql and
// applied in version order, each in its own transaction.
type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive version number and '_'", name)
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %q: versions must run 1, 2, 3, … without gaps", m.name)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this build writes: the number of its
// embedded migrations.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// Migrate applies the embedded migrations to the database at url (the
// schema first in its search_path) and returns; it is what Open does first,
// without the rest, for a `herald migrate` command. See Open for the url.
// Nil logger discards.
func Migrate(ctx context.Context, url string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return migrateConfig(ctx, cfg, logger)
}

// migrateConfig connects with cfg on a connection of its own, applies the
// migrations and disconnects.
func migrateConfig(ctx context.Context, cfg *pgx.ConnConfig, logger *slog.Logger) error {
	cfg = cfg.Copy()
	// Schema changes may take long on a large database: no statement
	// timeout for this connection; ctx bounds the wait.
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["statement_timeout"] = "0"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres store: connect: %w", err)
	}
	defer conn.Close(context.Background())
	from, to, err := migrate(ctx, conn)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	if from != to {
		logger.Info("postgres schema migrated", "from", from, "to", to)
	}
	return nil
}

// migrate brings the schema that conn's search_path selects up to the newest
// embedded version, under a session advisory lock keyed by the schema's name,
// so that nodes starting together apply each migration once (the others wait,
// then find it applied) while other schemas of the same database migrate
// independently. The schema_version table has one row per applied
// migration. A schema whose version is newer than this build knows is
// refused rather than used.
func migrate(ctx context.Context, conn *pgx.Conn) (from, to int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, 0, err
	}
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return 0, 0, fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return 0, 0, errors.New("no schema selected: the search_path names no existing schema")
	}
	const lockSQL = `SELECT pg_advisory_lock(hashtextextended('herald.migrate:' || $1, 0))`
	if _, err := conn.Exec(ctx, lockSQL, *schema); err != nil {
		return 0, 0, fmt.Errorf("take the migration lock: %w", err)
	}
	defer func() {
		// A failed unlock is harmless: the lock goes with the session,
		// which the caller closes.
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended('herald.migrate:' || $1, 0))`, *schema)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at bigint NOT NULL)`); err != nil {
		return 0, 0, fmt.Errorf("create schema_version: %w", err)
	}
	var cur int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	if cur > len(ms) {
		return cur, cur, fmt.Errorf("database schema version %d is newer than this build's %d", cur, len(ms))
	}
	for _, m := range ms[cur:] {
		if err := applyMigration(ctx, conn, m); err != nil {
			return cur, m.version - 1, err
		}
	}
	return cur, len(ms), nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Simple protocol: a migration file holds several statements.
		if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.version, m.name, time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}
