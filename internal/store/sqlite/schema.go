package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store/migrate"
	"github.com/herald-events/herald/internal/store/sqlrow"
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

// runMigrations brings the database on conn up to the newest embedded schema. The
// schema_version table has one row per applied migration. A database whose
// version is newer than this build knows is refused rather than used.
func runMigrations(ctx context.Context, conn *sql.Conn) (from, to int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, 0, err
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL)`); err != nil {
		return 0, 0, fmt.Errorf("create schema_version: %w", err)
	}
	var cur int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	if cur > len(ms) {
		return cur, cur, fmt.Errorf("database schema version %d is newer than this build's %d", cur, len(ms))
	}
	for _, m := range ms[cur:] {
		if err := applyMigration(ctx, conn, m); err != nil {
			return cur, m.Version - 1, err
		}
	}
	return cur, len(ms), nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, m migration) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if m.Name == signingMigration {
		if err := backfillSigning(ctx, conn); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if m.Name == deadLetterMigration {
		if err := backfillDeadLetters(ctx, conn); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if m.Name == sqlrow.EndpointKeyMigration {
		if err := sqlrow.RekeyEndpoints(migrationTx{ctx, conn}); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// signingMigration is the migration that added signing keys (schema
// version 4): after its SQL, in its transaction, the subscriptions already
// stored get one each.
const signingMigration = "0004_signing.sql"

// backfillSigning gives every subscription without signing keys an
// HMAC-SHA256 secret, in the migration's transaction on conn.
func backfillSigning(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, sqlrow.BackfillSigningSQL)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return sqlrow.BackfillSigning(ids, func() (signing.Keyring, error) { return signing.NewSigning(signing.HMACSHA256) },
		func(id, v string) error {
			_, err := conn.ExecContext(ctx, `UPDATE subscriptions SET signing = ? WHERE id = ?`, v, id)
			return err
		})
}

// deadLetterMigration is the migration that added dead-letter endpoints
// (schema version 8): after its SQL, in its transaction, the subscriptions
// that named a dead-letter URL get its endpoint.
const deadLetterMigration = "0008_dead_letter_url.sql"

// backfillDeadLetters sets dead_letter_endpoint_id of every subscription
// naming a dead-letter URL and creates the endpoint rows that do not exist
// yet, at one new endpoints version, in the migration's transaction on
// conn.
func backfillDeadLetters(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, sqlrow.BackfillDeadLettersSQL)
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
	if err := conn.QueryRowContext(ctx, bumpEndpointsSQL).Scan(&v); err != nil {
		return fmt.Errorf("advance the endpoints version: %w", err)
	}
	for _, e := range eps {
		if _, err := conn.ExecContext(ctx, `UPDATE subscriptions SET dead_letter_endpoint_id = ? WHERE id = ?`, e.ID, e.Subscription); err != nil {
			return fmt.Errorf("dead-letter endpoint of subscription %s: %w", e.Subscription, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING`, e.ID, e.AccountID, e.URL, e.CreatedAt, v); err != nil {
			return fmt.Errorf("dead-letter endpoint %s of subscription %s: %w", e.ID, e.Subscription, err)
		}
	}
	return nil
}

// migrationTx is a migration's transaction on conn as
// sqlrow.RekeyEndpoints uses it.
type migrationTx struct {
	ctx  context.Context
	conn *sql.Conn
}

func (t migrationTx) Query(query string, scan func(sqlrow.RowScanner) error, args ...any) error {
	rows, err := t.conn.QueryContext(t.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlrow.EachRow(rows, scan)
}

func (t migrationTx) Exec(query string, args ...any) error {
	_, err := t.conn.ExecContext(t.ctx, query, args...)
	return err
}

// readEndpointKey reads the installation's endpoint key (schema 11 made
// it).
func readEndpointKey(ctx context.Context, conn *sql.Conn) (endpoint.Key, error) {
	var b []byte
	if err := conn.QueryRowContext(ctx, sqlrow.EndpointKeySQL).Scan(&b); err != nil {
		return endpoint.Key{}, fmt.Errorf("read the endpoint key: %w", err)
	}
	return endpoint.KeyFrom(b)
}
