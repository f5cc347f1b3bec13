// Package migrate loads the schema migrations of an SQL store
// (store/sqlite, store/postgres) from its embedded files.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema step of an SQL store. Files are named
// NNNN_name.sql and applied in version order, each in its own transaction.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the .sql files of dir in fsys (a store's embedded
// migrations) and returns them in version order. Versions must run 1, 2,
// 3, … without gaps.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive version number and '_'", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %q: versions must run 1, 2, 3, … without gaps", m.Name)
		}
	}
	return ms, nil
}
