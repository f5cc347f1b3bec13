package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/store/engine"
)

// A publish too large for one transaction is written in steps
// (internal/store/engine/staged.go), its reserved seqs recorded in a
// counter until its last step; a crash leaves the counter behind.
const (
	stagedCountersSQL = `SELECT name, value FROM counters WHERE name LIKE 'staged:%'`
	deleteCounterSQL  = `DELETE FROM counters WHERE name = ?`
	// deleteUnstagedSQL deletes the deliveries of a reserved range (first,
	// last) whose event was never inserted.
	deleteUnstagedSQL = `DELETE FROM deliveries WHERE event_seq BETWEEN ?1 AND ?2
AND NOT EXISTS (SELECT 1 FROM events WHERE seq = deliveries.event_seq)`
)

// recoverStaged deletes, on conn at Open, the deliveries of every staged
// publish a crash interrupted (those of its reserved seqs whose event was
// never inserted) and their counters.
func recoverStaged(ctx context.Context, conn *sql.Conn) (int64, error) {
	rows, err := conn.QueryContext(ctx, stagedCountersSQL)
	if err != nil {
		return 0, err
	}
	type rng struct {
		name        string
		first, last int64
	}
	var rs []rng
	for rows.Next() {
		var r rng
		if err := rows.Scan(&r.name, &r.last); err != nil {
			rows.Close()
			return 0, err
		}
		if r.first, err = strconv.ParseInt(strings.TrimPrefix(r.name, engine.StagedPrefix), 10, 64); err != nil {
			rows.Close()
			return 0, fmt.Errorf("counter %q: %w", r.name, err)
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var deleted int64
	for _, r := range rs {
		res, err := conn.ExecContext(ctx, deleteUnstagedSQL, r.first, r.last)
		if err != nil {
			return deleted, err
		}
		n, _ := res.RowsAffected()
		deleted += n
		if _, err := conn.ExecContext(ctx, deleteCounterSQL, r.name); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
