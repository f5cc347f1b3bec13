package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"strings"

	"github.com/herald-events/herald/internal/store/driver"
)

// writeConn is the one write connection, and the write transaction the
// engine's writer holds on it (driver.Tx): only the writer's goroutine
// uses it (GroupCommit.Exclusive), one transaction at a time. Statements
// are prepared on it once and reused for the life of the store.
type writeConn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt      // prepared for query and row
	execs map[string]sqldriver.Stmt // exec's, prepared on the driver connection (see exec)
	named []sqldriver.NamedValue    // exec's arguments, reused
	// isWrite caches, per statement text, whether it may change rows
	// (mayWrite); writes counts those run (Tx.Writes).
	isWrite map[string]bool
	writes  int64
	// expanded caches the texts of rows statements (expand), per
	// statement and row count.
	expanded map[expandKey]string
}

// bg is the context of every statement on the write connection: once the
// writer runs a request it is committed (or fails) whatever happens to
// its caller.
var bg = context.Background()

func newWriteConn(conn *sql.Conn) *writeConn {
	return &writeConn{conn: conn, stmts: map[string]*sql.Stmt{}, execs: map[string]sqldriver.Stmt{},
		isWrite: map[string]bool{}, expanded: map[expandKey]string{}}
}

// begin begins a write transaction (BEGIN IMMEDIATE: the file's write
// lock is taken at once).
func (w *writeConn) begin() error {
	_, err := w.exec("BEGIN IMMEDIATE")
	return err
}

// Commit implements driver.Tx: a failed COMMIT is rolled back, so nothing
// of the transaction was written.
func (w *writeConn) Commit(context.Context) error {
	if _, err := w.exec("COMMIT"); err != nil {
		w.rollback()
		return fmt.Errorf("%w: %w", driver.ErrRolledBack, err)
	}
	return nil
}

// Rollback implements driver.Tx.
func (w *writeConn) Rollback(context.Context) error {
	if _, err := w.exec("ROLLBACK"); err != nil && !isNoTransaction(err) {
		return err
	}
	return nil
}

func (w *writeConn) rollback() { _ = w.Rollback(bg) }

// Writes implements driver.Tx.
func (w *writeConn) Writes() int64 { return w.writes }

func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

// mayWrite reports whether query may change rows: every statement but a
// plain SELECT (a WITH … may end in an INSERT, UPDATE or DELETE).
func mayWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\n")
	return len(q) < 6 || !strings.EqualFold(q[:6], "SELECT")
}

// noteWrite counts query in writes when it may change rows (mayWrite,
// worked out once per text).
func (w *writeConn) noteWrite(query string) {
	write, ok := w.isWrite[query]
	if !ok {
		write = mayWrite(query)
		w.isWrite[query] = write
	}
	if write {
		w.writes++
	}
}

// stmt returns the statement for query, prepared once, and counts it
// (noteWrite).
func (w *writeConn) stmt(query string) (*sql.Stmt, error) {
	w.noteWrite(query)
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(bg, query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(query), err)
	}
	w.stmts[query] = st
	return st, nil
}

// exec runs a statement and returns how many rows it changed. It goes to
// the driver directly (sql.Conn.Raw), with a statement prepared there once
// and its arguments converted into one reused slice: through database/sql
// each call allocated a driver.NamedValue per argument (a rows statement
// has hundreds), about a tenth of the server's allocations under load.
// The arguments are converted as database/sql converts them
// (driver.DefaultParameterConverter), ints without reflection.
func (w *writeConn) exec(query string, args ...any) (int64, error) {
	w.noteWrite(query)
	var res sqldriver.Result
	err := w.conn.Raw(func(dc any) error {
		st, err := w.execStmt(dc, query)
		if err != nil {
			return err
		}
		if err := w.namedValues(args); err != nil {
			return err
		}
		res, err = st.(sqldriver.StmtExecContext).ExecContext(bg, w.named)
		clear(w.named) // let the arguments be collected
		return err
	})
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// execStmt returns exec's statement for query, prepared on the driver
// connection dc once. Call it inside conn.Raw only.
func (w *writeConn) execStmt(dc any, query string) (sqldriver.Stmt, error) {
	if st, ok := w.execs[query]; ok {
		return st, nil
	}
	st, err := dc.(sqldriver.ConnPrepareContext).PrepareContext(bg, query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(query), err)
	}
	w.execs[query] = st
	return st, nil
}

// namedValues converts args into w.named.
func (w *writeConn) namedValues(args []any) error {
	w.named = w.named[:0]
	for i, a := range args {
		var v sqldriver.Value
		switch x := a.(type) {
		case string, int64, []byte, nil, bool, float64:
			v = x
		case int:
			v = int64(x)
		default:
			var err error
			if v, err = sqldriver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return fmt.Errorf("argument %d: %w", i+1, err)
			}
		}
		w.named = append(w.named, sqldriver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return nil
}

// close closes the statements prepared on the connection.
func (w *writeConn) close() {
	for _, st := range w.stmts {
		_ = st.Close()
	}
	_ = w.conn.Raw(func(any) error {
		for _, st := range w.execs {
			_ = st.Close()
		}
		return nil
	})
}

// Exec implements driver.Executor.
func (w *writeConn) Exec(_ context.Context, q driver.Query, args ...any) (int64, error) {
	text, err := queries.SQL(q)
	if err != nil {
		return 0, err
	}
	if rows, ok := rowsOf(text, args); ok {
		var n int64
		err := rows.each(w, text, func(text string, args []any) error {
			m, err := w.exec(text, args...)
			n += m
			return err
		})
		return n, err
	}
	if args, err = bind(args); err != nil {
		return 0, err
	}
	return w.exec(text, args...)
}

// Query implements driver.Executor.
func (w *writeConn) Query(_ context.Context, q driver.Query, each func(driver.Row) error, args ...any) error {
	text, err := queries.SQL(q)
	if err != nil {
		return err
	}
	if rows, ok := rowsOf(text, args); ok {
		return rows.each(w, text, func(text string, args []any) error { return w.query(text, each, args) })
	}
	if args, err = bind(args); err != nil {
		return err
	}
	return w.query(text, each, args)
}

// query runs one statement and calls each for its rows.
func (w *writeConn) query(text string, each func(driver.Row) error, args []any) error {
	st, err := w.stmt(text)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(bg, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, each)
}

// QueryRow implements driver.Executor.
func (w *writeConn) QueryRow(_ context.Context, q driver.Query, args ...any) driver.Row {
	text, err := queries.SQL(q)
	if err == nil {
		args, err = bind(args)
	}
	if err != nil {
		return row{err: err}
	}
	st, err := w.stmt(text)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(bg, args...)}
}

// rowsMark marks the one row of parameters of a rows statement (see
// internal/store/driver): the driver repeats it for each row.
const rowsMark = "/*rows*/"

// maxRowsPerStatement bounds the rows of one run of a rows statement: 32
// rows of 23 parameters at most, far below SQLite's limit of 32,766, and
// few statement texts to prepare (one per row count).
const maxRowsPerStatement = 32

// columns are a rows statement's arguments: slices of one length.
type columns struct {
	cols []any
	n    int
}

// rowsOf returns args as the columns of text when text is a rows
// statement.
func rowsOf(text string, args []any) (columns, bool) {
	if !strings.Contains(text, rowsMark) {
		return columns{}, false
	}
	c := columns{cols: args, n: -1}
	for _, a := range args {
		if x, ok := a.([]string); ok && x == nil {
			continue // NULL in every row, of any length
		}
		n := columnLen(a)
		if c.n >= 0 && n != c.n {
			c.n = -2 // told by each
			break
		}
		c.n = n
	}
	if c.n == -1 {
		c.n = 0 // only nil columns: no rows
	}
	return c, true
}

// columnLen is the length of a column.
func columnLen(a any) int {
	switch x := a.(type) {
	case []string:
		return len(x)
	case driver.FreeText:
		return len(x)
	case []int64:
		return len(x)
	case [][]byte:
		return len(x)
	}
	return -2
}

// at is the value of column c at row i.
func at(c any, i int) any {
	switch x := c.(type) {
	case []string:
		if x == nil {
			return nil // a nil column: NULL
		}
		return x[i]
	case driver.FreeText:
		return x[i]
	case []int64:
		return x[i]
	case [][]byte:
		return x[i]
	}
	return nil
}

// each runs text over the columns' rows, maxRowsPerStatement at a time,
// through run (with the statement's text for that many rows and its
// arguments, row after row).
func (c columns) each(w *writeConn, text string, run func(text string, args []any) error) error {
	if c.n < 0 {
		return fmt.Errorf("rows statement %q: its arguments are not columns of one length", firstLine(text))
	}
	var nulls uint64 // the nil columns: NULL in the text, not bound
	bound := 0
	for k, col := range c.cols {
		if x, ok := col.([]string); ok && x == nil && k < 64 {
			nulls |= 1 << k
		} else {
			bound++
		}
	}
	args := make([]any, 0, min(c.n, maxRowsPerStatement)*bound)
	for start := 0; start < c.n; start += maxRowsPerStatement {
		end := min(start+maxRowsPerStatement, c.n)
		args = args[:0]
		for i := start; i < end; i++ {
			for k, col := range c.cols {
				if nulls&(1<<k) == 0 {
					args = append(args, at(col, i))
				}
			}
		}
		if err := run(w.expand(text, len(c.cols), end-start, nulls), args); err != nil {
			return err
		}
	}
	return nil
}

// expandKey names a text of expand.
type expandKey struct {
	text  string
	rows  int
	nulls uint64
}

// expand returns text with its marked row of params parameters (?1 …
// ?params, in the parentheses after rowsMark: the statement's only ones)
// written rows times, as anonymous parameters (?), which SQLite numbers in
// order: numbered ones cost the SQLite driver a lookup of each one's name
// at every bind, an eighth of the writer's time. A parameter whose bit is
// set in nulls (?k: bit k-1; a nil column) is written NULL instead, and
// takes no argument: a column that is NULL in every row binds nothing.
func (w *writeConn) expand(text string, params, rows int, nulls uint64) string {
	k := expandKey{text, rows, nulls}
	if q, ok := w.expanded[k]; ok {
		return q
	}
	row := make([]string, params)
	for p := range row {
		row[p] = "?"
		if nulls&(1<<p) != 0 {
			row[p] = "NULL"
		}
	}
	one := "(" + strings.Join(row, ", ") + ")"
	i := strings.Index(text, rowsMark)
	j := i + strings.IndexByte(text[i:], ')') + 1
	var b strings.Builder
	b.WriteString(text[:i])
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	b.WriteString(text[j:])
	q := b.String()
	w.expanded[k] = q
	return q
}
