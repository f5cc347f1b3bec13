package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Broker sources and their dead letters (store.SourceStore). The columns
// of a source (sourceCols): id, account_id, name, type, config (the
// source.Config as JSON), paused, created_at, updated_at, revision,
// received, published, duplicates, dead_lettered, lag, last_error,
// last_error_at, failing; of a dead letter (deadLetterCols): id,
// source_id, message_id, reason, body, size, received_at. Times are Unix
// milliseconds, 0 for none.
var (
	// qCountSources counts the sources.
	qCountSources = query("CountSources")
	// qInsertSource inserts a source (sourceCols), nothing when its name
	// is taken in its account.
	qInsertSource = query("InsertSource")
	// qGetSource reads source $1 (sourceCols).
	qGetSource = query("GetSource")
	// qListSourceSizes and qListSources are the list's page (readPage):
	// the sources after the id $1, in id order, with the LIMIT $2.
	qListSourceSizes = query("ListSourceSizes")
	qListSources     = query("ListSources")
	// qAllSources reads every source in id order.
	qAllSources = query("AllSources")
	// qSourceNameTaken counts the sources of account $1 named $2 other
	// than $3.
	qSourceNameTaken = query("SourceNameTaken")
	// qUpdateSource sets source $1's name ($2), config, paused, updated_at
	// and revision ($6) when its revision is $7.
	qUpdateSource = query("UpdateSource")
	// qDeleteSource deletes source $1; qDeleteSourceDeadLetters its dead
	// letters; qDeleteLeader the role $1 (its consumers' lease).
	qDeleteSource            = query("DeleteSource")
	qDeleteSourceDeadLetters = query("DeleteSourceDeadLetters")
	qDeleteLeader            = query("DeleteLeader")
	// qReportSource adds received ($2), published and duplicates ($4) to
	// source $1's counts and sets its lag ($5); an error ($6 not '') is
	// the last error at $7; failing ($8) is 1 or 0 to set it, -1 to keep
	// it.
	qReportSource = query("ReportSource")
	// qCountSourceDeadLetter adds one to source $1's dead_lettered.
	qCountSourceDeadLetter = query("CountSourceDeadLetter")
	// qInsertSourceDeadLetter inserts a dead letter (deadLetterCols).
	qInsertSourceDeadLetter = query("InsertSourceDeadLetter")
	// qTrimSourceDeadLetters deletes source $1's dead letters but the $2
	// newest.
	qTrimSourceDeadLetters = query("TrimSourceDeadLetters")
	// qListSourceDeadLetterSizes and qListSourceDeadLetters are the dead
	// letter list's page (readPage): source $1's after the id $2, in id
	// order, with the LIMIT $3.
	qListSourceDeadLetterSizes = query("ListSourceDeadLetterSizes")
	qListSourceDeadLetters     = query("ListSourceDeadLetters")
)

// CreateSource implements store.SourceStore.
func (s *Store) CreateSource(ctx context.Context, src source.Source) error {
	config, err := encodeJSON(src.Config)
	if err != nil {
		return err
	}
	return s.write(ctx, func(x driver.Executor) error {
		var n int
		switch err := x.QueryRow(ctx, qAccountExists, src.AccountID).Scan(&n); {
		case errors.Is(err, driver.ErrNoRows):
			return fmt.Errorf("account %s: %w", src.AccountID, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("read account %s: %w", src.AccountID, err)
		}
		if err := x.QueryRow(ctx, qCountSources).Scan(&n); err != nil {
			return fmt.Errorf("count the sources: %w", err)
		}
		if n >= source.MaxSources {
			return store.ErrSourceLimit
		}
		st := src.Status
		switch n, err := x.Exec(ctx, qInsertSource, src.ID, src.AccountID, src.Name, src.Type, config, src.Paused,
			sqlrow.UnixMS(src.CreatedAt), sqlrow.UnixMS(src.UpdatedAt), src.Revision, st.Received, st.Published, st.Duplicates,
			st.DeadLettered, st.Lag, st.LastError, sqlrow.UnixMS(st.LastErrorAt), st.Failing); {
		case err != nil:
			return fmt.Errorf("insert source: %w", err)
		case n == 0:
			return fmt.Errorf("source %q: %w", src.Name, store.ErrNameTaken)
		}
		return nil
	})
}

// GetSource implements store.SourceStore.
func (s *Store) GetSource(ctx context.Context, id string) (source.Source, error) {
	src, err := scanSource(s.drv.Reader().QueryRow(ctx, qGetSource, id))
	if errors.Is(err, driver.ErrNoRows) {
		return source.Source{}, fmt.Errorf("source %s: %w", id, store.ErrNotFound)
	}
	return src, err
}

// ListSources implements store.SourceStore.
func (s *Store) ListSources(ctx context.Context, p store.Page) ([]source.Source, string, error) {
	if err := store.SourceCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return readPage(ctx, s, p, qListSourceSizes, qListSources, []any{p.Cursor}, scanSource,
		func(src source.Source) string { return src.ID })
}

// AllSources implements store.SourceStore.
func (s *Store) AllSources(ctx context.Context) ([]source.Source, error) {
	var out []source.Source
	err := s.drv.Snapshot(ctx, func(x driver.Executor) error {
		out = nil
		return x.Query(ctx, qAllSources, func(r driver.Row) error {
			src, err := scanSource(r)
			out = append(out, src)
			return err
		})
	})
	return out, err
}

// UpdateSource implements store.SourceStore.
func (s *Store) UpdateSource(ctx context.Context, src source.Source) error {
	config, err := encodeJSON(src.Config)
	if err != nil {
		return err
	}
	return s.write(ctx, func(x driver.Executor) error {
		if src.Name != "" {
			var n int
			if err := x.QueryRow(ctx, qSourceNameTaken, src.AccountID, src.Name, src.ID).Scan(&n); err != nil {
				return fmt.Errorf("read the source names: %w", err)
			}
			if n > 0 {
				return fmt.Errorf("source %q: %w", src.Name, store.ErrNameTaken)
			}
		}
		n, err := x.Exec(ctx, qUpdateSource, src.ID, src.Name, config, src.Paused, sqlrow.UnixMS(src.UpdatedAt), src.Revision, src.Revision-1)
		if err != nil {
			return fmt.Errorf("update source %s: %w", src.ID, err)
		}
		if n == 0 {
			return s.sourceMissedWrite(ctx, x, src.ID)
		}
		return nil
	})
}

// sourceMissedWrite says why a write of source id changed no row:
// ErrNotFound, or ErrConflict (another write came between).
func (s *Store) sourceMissedWrite(ctx context.Context, x driver.Executor, id string) error {
	if _, err := scanSource(x.QueryRow(ctx, qGetSource, id)); errors.Is(err, driver.ErrNoRows) {
		return fmt.Errorf("source %s: %w", id, store.ErrNotFound)
	}
	return fmt.Errorf("source %s was changed since it was read: %w", id, store.ErrConflict)
}

// DeleteSource implements store.SourceStore.
func (s *Store) DeleteSource(ctx context.Context, id string) error {
	return s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qDeleteSource, id)
		switch {
		case err != nil:
			return fmt.Errorf("delete source %s: %w", id, err)
		case n == 0:
			return fmt.Errorf("source %s: %w", id, store.ErrNotFound)
		}
		if _, err := x.Exec(ctx, qDeleteSourceDeadLetters, id); err != nil {
			return fmt.Errorf("delete source %s's dead letters: %w", id, err)
		}
		if _, err := x.Exec(ctx, qDeleteLeader, store.SourceLeaderRole(id)); err != nil {
			return fmt.Errorf("delete source %s's lease: %w", id, err)
		}
		return nil
	})
}

// ReportSource implements store.SourceStore.
func (s *Store) ReportSource(ctx context.Context, id string, r source.Report) error {
	failing := -1
	switch {
	case r.Err != "":
		failing = 1
	case r.Read:
		failing = 0
	}
	return s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qReportSource, id, r.Received, r.Published, r.Duplicates, r.Lag, r.Err, sqlrow.UnixMS(r.ErrAt), failing)
		switch {
		case err != nil:
			return fmt.Errorf("report source %s: %w", id, err)
		case n == 0:
			return fmt.Errorf("source %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}

// AddSourceDeadLetter implements store.SourceStore.
func (s *Store) AddSourceDeadLetter(ctx context.Context, dl source.DeadLetter) error {
	return s.write(ctx, func(x driver.Executor) error {
		n, err := x.Exec(ctx, qCountSourceDeadLetter, dl.SourceID)
		switch {
		case err != nil:
			return fmt.Errorf("count source %s's dead letter: %w", dl.SourceID, err)
		case n == 0:
			return fmt.Errorf("source %s: %w", dl.SourceID, store.ErrNotFound)
		}
		if _, err := x.Exec(ctx, qInsertSourceDeadLetter, dl.ID, dl.SourceID, dl.MessageID, dl.Reason, orEmpty(dl.Body), dl.Size,
			sqlrow.UnixMS(dl.ReceivedAt)); err != nil {
			return fmt.Errorf("insert source %s's dead letter: %w", dl.SourceID, err)
		}
		if _, err := x.Exec(ctx, qTrimSourceDeadLetters, dl.SourceID, source.MaxDeadLetters); err != nil {
			return fmt.Errorf("trim source %s's dead letters: %w", dl.SourceID, err)
		}
		return nil
	})
}

// ListSourceDeadLetters implements store.SourceStore.
func (s *Store) ListSourceDeadLetters(ctx context.Context, sourceID string, p store.Page) ([]source.DeadLetter, string, error) {
	if err := store.SourceDeadLetterCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return readPage(ctx, s, p, qListSourceDeadLetterSizes, qListSourceDeadLetters, []any{sourceID, p.Cursor}, scanSourceDeadLetter,
		func(dl source.DeadLetter) string { return dl.ID })
}

// scanSource reads sourceCols.
func scanSource(r sqlrow.RowScanner) (source.Source, error) {
	var src source.Source
	var config string
	var created, updated, errAt int64
	st := &src.Status
	if err := r.Scan(&src.ID, &src.AccountID, &src.Name, &src.Type, &config, &src.Paused, &created, &updated, &src.Revision,
		&st.Received, &st.Published, &st.Duplicates, &st.DeadLettered, &st.Lag, &st.LastError, &errAt, &st.Failing); err != nil {
		return src, err
	}
	if err := json.Unmarshal([]byte(config), &src.Config); err != nil {
		return src, fmt.Errorf("source %s: config: %w", src.ID, err)
	}
	src.CreatedAt, src.UpdatedAt, st.LastErrorAt = sqlrow.FromUnixMS(created), sqlrow.FromUnixMS(updated), sqlrow.FromUnixMS(errAt)
	return src, nil
}

// scanSourceDeadLetter reads deadLetterCols.
func scanSourceDeadLetter(r sqlrow.RowScanner) (source.DeadLetter, error) {
	var dl source.DeadLetter
	var at int64
	err := r.Scan(&dl.ID, &dl.SourceID, &dl.MessageID, &dl.Reason, &dl.Body, &dl.Size, &at)
	dl.ReceivedAt = sqlrow.FromUnixMS(at)
	if dl.Body == nil {
		dl.Body = []byte{} // an empty body reads back as nil from some drivers
	}
	return dl, err
}
