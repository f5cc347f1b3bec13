package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step.
type migration = migrate.Migration

func loadMigrations() ([]migration, error) {
	return migrate.LoadMigrations(migrationFiles, "migrations")
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
// migrations and disconnects. The connection gets cfg's start-up parameters
// only: no statement timeout among them (migrate sets none, per
// transaction, instead).
func migrateConfig(ctx context.Context, cfg *pgx.ConnConfig, logger *slog.Logger) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres store: connect: %w", err)
	}
	defer conn.Close(context.Background())
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	from, to, applied, err := runMigrations(ctx, conn, ms)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	if applied > 0 {
		logger.Info("postgres schema migrated", "from", from, "to", to, "applied", applied)
	}
	return nil
}

// migrateTx begins each migration transaction. Schema changes may take long
// on a large database, so no statement timeout holds in it (ctx bounds the
// wait), whatever the URL or the role sets. It is SET LOCAL, as in the
// store's own transactions, so that nothing outlives the transaction on a
// server connection that a bouncer shares (see the package comment).
var migrateTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL statement_timeout = 0"}

// migrateLockSQL takes the migration lock of a schema: a transaction-level
// advisory lock, released when its transaction ends. The key is the one the
// session-level lock of earlier builds used, so that such a build and this
// one exclude each other while they migrate.
const migrateLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('herald.migrate:' || current_schema(), 0))`

// runMigrations brings the schema that conn's search_path selects up to the newest
// version of ms (the embedded migrations, from loadMigrations), one
// migration per transaction. Each transaction first
// takes the schema's migration lock (migrateLockSQL), then reads the
// schema_version table (one row per applied migration; created if missing)
// and applies the next migration, if any, with its schema_version row. So
// nodes starting together apply each migration exactly once (the others wait
// for the lock, then find it applied), schemas of one database migrate
// independently, and since the lock ends with its transaction no lock is
// left behind when a bouncer in transaction pool mode runs successive
// transactions on different server connections. Every statement runs in
// such a transaction, none on the bare session, and in exec mode (unnamed
// prepared statements), whatever the URL's default_query_exec_mode: the
// statements run once each, and pgx's statement cache does not outlive a
// transaction behind a transaction-pooling bouncer. A schema whose version
// is newer than this build knows is refused rather than used. It returns
// the version found first, the version left, and how many migrations this
// call applied (with concurrent callers, others may have applied some of
// those between from and to).
func runMigrations(ctx context.Context, conn *pgx.Conn, ms []migration) (from, to, applied int, err error) {
	for first := true; ; first = false {
		var cur int
		err := pgx.BeginTxFunc(ctx, conn, migrateTx, func(tx pgx.Tx) error {
			var err error
			if cur, err = lockedVersion(ctx, tx); err != nil {
				return err
			}
			if cur >= len(ms) {
				return nil
			}
			return applyMigration(ctx, tx, ms[cur])
		})
		if first {
			from = cur
		}
		if err != nil {
			return from, cur, applied, err
		}
		if cur > len(ms) {
			return from, cur, applied, fmt.Errorf("database schema version %d is newer than this build's %d", cur, len(ms))
		}
		if cur == len(ms) {
			return from, cur, applied, nil
		}
		applied++
		if cur+1 == len(ms) {
			return from, cur + 1, applied, nil
		}
	}
}

// lockedVersion takes the migration lock of tx's schema and returns the
// schema's version, creating the schema_version table if it is missing.
func lockedVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`, pgx.QueryExecModeExec).Scan(&schema); err != nil {
		return 0, fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return 0, errors.New("no schema selected: the search_path names no existing schema")
	}
	if _, err := tx.Exec(ctx, migrateLockSQL, pgx.QueryExecModeExec); err != nil {
		return 0, fmt.Errorf("take the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at bigint NOT NULL)`, pgx.QueryExecModeExec); err != nil {
		return 0, fmt.Errorf("create schema_version: %w", err)
	}
	var cur int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`, pgx.QueryExecModeExec).Scan(&cur); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return cur, nil
}

// applyMigration runs m and records it in schema_version, in tx.
func applyMigration(ctx context.Context, tx pgx.Tx, m migration) error {
	// Simple protocol: a migration file holds several statements.
	if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if m.Name == signingMigration {
		if err := backfillSigning(ctx, tx); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if m.Name == deadLetterMigration {
		if err := backfillDeadLetters(ctx, tx); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if m.Name == sqlrow.EndpointKeyMigration {
		if err := sqlrow.RekeyEndpoints(migrationTx{ctx, tx}); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)`,
		pgx.QueryExecModeExec, m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return nil
}

// signingMigration is the migration that added signing keys (schema
// version 4): after its SQL, in its transaction, the subscriptions already
// stored get one each.
const signingMigration = "0004_signing.sql"

// backfillSigning gives every subscription without signing keys an
// HMAC-SHA256 secret, in the migration's transaction.
func backfillSigning(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, sqlrow.BackfillSigningSQL, pgx.QueryExecModeExec)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	return sqlrow.BackfillSigning(ids, func() (signing.Keyring, error) { return signing.NewSigning(signing.HMACSHA256) },
		func(id, v string) error {
			_, err := tx.Exec(ctx, `UPDATE subscriptions SET signing = $1 WHERE id = $2`, pgx.QueryExecModeExec, v, id)
			return err
		})
}

// deadLetterMigration is the migration that added dead-letter endpoints
// (schema version 8): after its SQL, in its transaction, the subscriptions
// that named a dead-letter URL get its endpoint.
const deadLetterMigration = "0008_dead_letter_url.sql"

// backfillDeadLetters sets dead_letter_endpoint_id of every subscription
// naming a dead-letter URL and creates the endpoint rows that do not exist
// yet, at one new endpoints version, in the migration's transaction.
func backfillDeadLetters(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, sqlrow.BackfillDeadLettersSQL, pgx.QueryExecModeExec)
	if err != nil {
		return err
	}
	eps, err := sqlrow.BackfillDeadLetters(rows)
	rows.Close()
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		return nil
	}
	var v int64
	if err := tx.QueryRow(ctx, bumpEndpointsSQL, pgx.QueryExecModeExec).Scan(&v); err != nil {
		return fmt.Errorf("advance the endpoints version: %w", err)
	}
	for _, e := range eps {
		if _, err := tx.Exec(ctx, `UPDATE subscriptions SET dead_letter_endpoint_id = $1 WHERE id = $2`,
			pgx.QueryExecModeExec, e.ID, e.Subscription); err != nil {
			return fmt.Errorf("dead-letter endpoint of subscription %s: %w", e.Subscription, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING`, pgx.QueryExecModeExec, e.ID, e.AccountID, e.URL, e.CreatedAt, v); err != nil {
			return fmt.Errorf("dead-letter endpoint %s of subscription %s: %w", e.ID, e.Subscription, err)
		}
	}
	return nil
}

// migrationTx is a migration's transaction as sqlrow.RekeyEndpoints uses
// it, its statements run in exec mode as every migration statement is.
type migrationTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t migrationTx) Query(query string, scan func(sqlrow.RowScanner) error, args ...any) error {
	rows, err := t.tx.Query(t.ctx, query, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlrow.EachRow(rows, scan)
}

func (t migrationTx) Exec(query string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, query, append([]any{pgx.QueryExecModeExec}, args...)...)
	return err
}
