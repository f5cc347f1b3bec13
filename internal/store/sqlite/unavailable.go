package sqlite

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/herald-events/herald/internal/store"
)

// SQLite's primary result codes (https://sqlite.org/rescode.html) of a
// file that cannot be written or read now: an extended code keeps its
// primary one in its low byte (SQLITE_IOERR_WRITE, _FSYNC, _SHMMAP, ...).
const (
	codeNoMem    = 7
	codeIOErr    = 10
	codeFull     = 13
	codeCantOpen = 14
)

// isUnavailable reports whether err says the database file cannot be
// written (or read) now for a reason outside Herald: SQLITE_FULL (the disk
// is full, the write-ahead log cannot grow), SQLITE_IOERR and its extended
// codes (a failing write, fsync or shared-memory map of the WAL),
// SQLITE_CANTOPEN, SQLITE_NOMEM, or ENOSPC, EIO, EDQUOT met outside
// SQLite.
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case codeFull, codeIOErr, codeCantOpen, codeNoMem:
			return true
		}
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EDQUOT)
}

// unavailable marks err store.ErrUnavailable when isUnavailable.
func unavailable(err error) error {
	if isUnavailable(err) {
		return store.Unavailable(err)
	}
	return err
}

// noteWrite keeps what the last answered write says of the file: one that
// failed as unavailable marks the store away (Ping then probes), one that
// committed clears the mark. Other failures (a missing row, a conflict)
// say nothing of the file and leave the mark as it is.
func (s *Store) noteWrite(err error) {
	switch {
	case err == nil:
		s.away.Store(nil)
	case errors.Is(err, store.ErrUnavailable):
		s.away.Store(&err)
	}
}

// probeSQL rewrites one row as it is: a write that needs the write-ahead
// log to take a page, as any publish does, and changes nothing.
const probeSQL = `UPDATE counters SET value = value WHERE name = 'catalog_pruned'`

// probe answers Ping while the store is marked away: whether a small write
// commits now (and so the mark clears), else the error that says why not.
func (s *Store) probe(ctx context.Context) error {
	err := s.write(ctx, func(w *writer) error {
		_, err := w.exec(probeSQL)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("probe write: %w", err)
	}
	return err
}
