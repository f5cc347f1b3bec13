package postgres

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-events/herald/internal/store"
)

// unavailable marks err store.ErrUnavailable (store.Unavailable) when it
// says that the server cannot be reached or cannot serve now, for a
// reason that passes without a change to Herald: see isUnavailable. Every
// transaction the store runs ends here (tx, readTx, the writers' batches,
// Ping), so every method's error is classified.
func unavailable(err error) error {
	if isUnavailable(err) {
		return store.Unavailable(err)
	}
	return err
}

// unavailableCodes are the SQLSTATEs of a server that is away or out of
// resources (PostgreSQL's Appendix A): a connection exception (class 08,
// by its prefix), an administrator's or a crash's shutdown and a server
// starting up (57P01, 57P02, 57P03, 57P05 idle session timeout),
// insufficient resources (class 53: a full disk, memory, too many
// connections), a system I/O error (58000, 58030), and a read-only
// transaction (25006: a standby, such as a failed-over primary that has
// not been promoted yet).
var unavailableCodes = map[string]bool{
	"57P01": true, "57P02": true, "57P03": true, "57P05": true,
	"53000": true, "53100": true, "53200": true, "53300": true, "53400": true,
	"58000": true, "58030": true,
	"25006": true,
}

// isUnavailable reports whether err is the server being away: one of
// unavailableCodes, a failed connect (refused, reset, a name not
// resolved, the server closing the connection before it was ready), or a
// connection lost under a call (EOF, reset, broken pipe, pgconn's closed
// connection). Context errors are the caller's and are left alone.
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || unavailableCodes[pe.Code]
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
