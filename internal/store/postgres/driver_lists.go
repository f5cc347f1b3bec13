package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store/driver"
)

// ListSnapshot implements driver.Lister: Snapshot's transaction, with
// plan_cache_mode = force_custom_plan set with the BEGIN (listOpts, at no
// extra round trip), so that every statement is planned for its
// arguments: a generic plan, to which PostgreSQL may switch a prepared
// statement after a few runs, would serve every account with the plan of
// an average one. Planning a page's two statements costs well under a
// millisecond.
func (d pgDriver) ListSnapshot(ctx context.Context, fn func(driver.Executor) error) error {
	return d.b.readTx(ctx, d.b.listOpts, func(tx pgx.Tx) error { return fn(txExec{tx}) })
}
