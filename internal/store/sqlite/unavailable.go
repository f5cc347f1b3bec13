package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/herald-events/herald/internal/store"
	storedriver "github.com/herald-events/herald/internal/store/driver"
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
func (s *backend) noteWrite(err error) {
	switch {
	case err == nil:
		if s.away.Load() != nil { // a load, not a store, on every write
			s.away.Store(nil)
		}
	case errors.Is(err, store.ErrUnavailable):
		s.away.Store(&err)
	}
}

// probeSQL rewrites one row as it is: a write that needs the write-ahead
// log to take a page, as any publish does, and changes nothing.
const probeSQL = `UPDATE counters SET value = value WHERE name = 'catalog_pruned'`

// minFreeAfterFull is the room the file's filesystem must have before a
// store marked away by a full disk is ready again: a few of the largest
// publishes (1 MiB each, internal/event) and their write-ahead log frames.
// A small write alone would prove too little: it fits in the log's space
// that the failed write left, where the next publish does not.
const minFreeAfterFull = 4 << 20

// probe answers Ping while the store is marked away: whether the file's
// filesystem has minFreeAfterFull bytes free (where that can be read) and
// a small write commits now (and so the mark clears), else an error that
// says why not (cause: the failure that marked it away).
func (s *backend) probe(ctx context.Context, cause error) error {
	dir := filepath.Dir(s.path)
	if free, ok := freeBytes(dir); ok && free < minFreeAfterFull {
		return fmt.Errorf("%w: the disk holding %s has %d bytes free, less than the %d a write needs after a full disk (the last write: %v)",
			store.ErrUnavailable, dir, free, minFreeAfterFull, strings.TrimPrefix(cause.Error(), store.ErrUnavailable.Error()+": "))
	}
	err := s.write(ctx, func(x storedriver.Executor) error {
		_, err := x.(*writeConn).exec(probeSQL)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("probe write: %w", err)
	}
	return err
}
