package driver

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Queries are a driver's statements by name, read from its queries/*.sql
// files (ParseQueries).
type Queries map[Query]string

// SQL returns q's statement, or an error naming q when the driver has none.
func (qs Queries) SQL(q Query) (string, error) {
	if s, ok := qs[q]; ok {
		return s, nil
	}
	if s, ok, err := qs.compose(q); ok {
		return s, err
	}
	return "", fmt.Errorf("store driver: no statement named %q", q)
}

// Names returns the names of qs, sorted.
func (qs Queries) Names() []Query {
	names := make([]Query, 0, len(qs))
	for q := range qs {
		names = append(names, q)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// ParseQueries reads every .sql file of dir in fsys. A statement begins
// at a line "-- name: Name" and runs to the next such line or the end of
// its file; comment lines ("--") directly above a name line are its
// documentation and belong to no statement. A name given twice, or a name
// line with nothing after it, is an error.
func ParseQueries(fsys fs.FS, dir string) (Queries, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	qs := Queries{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		if err := parseFile(qs, f, string(b)); err != nil {
			return nil, err
		}
	}
	return qs, nil
}

// MustParseQueries is ParseQueries for a driver's embedded files, read
// once at start-up: an error is a fault of the build, so it panics.
func MustParseQueries(fsys fs.FS, dir string) Queries {
	qs, err := ParseQueries(fsys, dir)
	if err != nil {
		panic(err)
	}
	return qs
}

// parseFile adds the statements of one file to qs (see ParseQueries).
func parseFile(qs Queries, file, text string) error {
	var name Query
	var body []string
	flush := func() error {
		if name == "" {
			return nil
		}
		sql := strings.TrimSpace(strings.Join(trimComments(body), "\n"))
		if sql == "" {
			return fmt.Errorf("%s: statement %q is empty", file, name)
		}
		if _, dup := qs[name]; dup {
			return fmt.Errorf("%s: statement %q is named twice", file, name)
		}
		qs[name] = sql
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			if err := flush(); err != nil {
				return err
			}
			name, body = Query(strings.TrimSpace(n)), nil
			if name == "" {
				return fmt.Errorf("%s: a name line without a name", file)
			}
			continue
		}
		body = append(body, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return flush()
}

// trimComments drops the comment and blank lines at the end of a
// statement's lines: the documentation of the statement that follows.
func trimComments(lines []string) []string {
	for len(lines) > 0 {
		l := strings.TrimSpace(lines[len(lines)-1])
		if l != "" && !strings.HasPrefix(l, "--") {
			break
		}
		lines = lines[:len(lines)-1]
	}
	return lines
}
