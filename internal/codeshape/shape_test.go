package codeshape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Limits of the shape rules.
const (
	maxFuncLines   = 90
	maxTypeMethods = 20
)

// wideTypesAllowed are the types that may have more than maxTypeMethods
// methods, by package directory and type name: the store engine's Store
// (the whole persistence contract), what the drivers still implement of it
// themselves (backend, writer) until it moves to the engine, and the API's
// handlers (one method per route).
var wideTypesAllowed = map[string]bool{
	"internal/store/engine.Store":     true,
	"internal/store/sqlite.backend":   true,
	"internal/store/sqlite.writer":    true,
	"internal/store/postgres.backend": true,
	"internal/store/postgres.writer":  true,
	"internal/api.Server":             true,
}

// outsideDocument matches, in a comment, a citation of a document that is not
// in the repository: the design document (its name in capitals, with or
// without its extension) and the shared directory beside the repository with
// its seeds.
var outsideDocument = regexp.MustCompile(`\bDESIGN\b|\.\./shared\b|\bshared/|\bseeds/`)

// storeURLPrefixes are the string literals that tell a PostgreSQL store URL
// from the embedded store's; only internal/store may use them.
var storeURLPrefixes = []string{`"postgres://"`, `"postgresql://"`}

// violation is one breach of a rule: where it is, a stable key naming it
// (rule, file and declaration), and what is wrong.
type violation struct {
	pos token.Position
	key string
	msg string
}

// source is one parsed .go file with its path from the module's root
// (slash-separated).
type source struct {
	rel  string
	file *ast.File
}

// module is every .go file of the module, parsed once for all the tests.
type module struct {
	fset  *token.FileSet
	files []source
}

var parsed *module

// load parses every .go file under the module's root (directories named
// testdata or vendor, or starting with "." or "_", left out), once.
func load(t *testing.T) *module {
	t.Helper()
	if parsed != nil {
		return parsed
	}
	root := moduleRoot(t)
	m := &module{fset: token.NewFileSet()}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(m.fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		m.files = append(m.files, source{rel: filepath.ToSlash(rel), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.files) == 0 {
		t.Fatalf("no .go files under %s", root)
	}
	parsed = m
	return m
}

// moduleRoot is the nearest directory at or above the test's working
// directory that holds go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// report fails t for each violation, in file order. rule names the rule
// (the first word of each violation's key).
func report(t *testing.T, rule string, found []violation) {
	t.Helper()
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	for _, v := range found {
		t.Errorf("%s:%d: %s (%s)", v.pos.Filename, v.pos.Line, v.msg, rule)
	}
}

// TestFunctionsAtMost90Lines: no function, method or function literal is over
// maxFuncLines lines, from the func keyword to the closing brace.
func TestFunctionsAtMost90Lines(t *testing.T) {
	m := load(t)
	var found []violation
	for _, src := range m.files {
		found = append(found, longFunctions(m.fset, src)...)
	}
	report(t, "func", found)
}

// longFunctions lists the functions of src over maxFuncLines lines. A
// function literal is named after the declaration that holds it; one inside a
// function that is itself too long is not listed again.
func longFunctions(fset *token.FileSet, src source) []violation {
	var found []violation
	check := func(n ast.Node, name string) bool {
		lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
		if lines <= maxFuncLines {
			return false
		}
		found = append(found, violation{
			pos: fset.Position(n.Pos()),
			key: "func " + src.rel + " " + name,
			msg: fmt.Sprintf("%s is %d lines (at most %d)", name, lines, maxFuncLines),
		})
		return true
	}
	for _, decl := range src.file.Decls {
		name := declName(decl)
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil && check(fn, name) {
			continue
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			lit, ok := n.(*ast.FuncLit)
			return !ok || !check(lit, "func literal in "+name)
		})
	}
	return found
}

// declName names a top-level declaration: Name for a function, Recv.Name for
// a method, the first name it declares otherwise.
func declName(decl ast.Decl) string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			return receiverType(d.Recv.List[0].Type) + "." + d.Name.Name
		}
		return d.Name.Name
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				return s.Names[0].Name
			case *ast.TypeSpec:
				return s.Name.Name
			}
		}
	}
	return "?"
}

// receiverType is the name of a method's receiver type, without pointer or
// type parameters.
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return "?"
		}
	}
}

// TestTypesAtMost20Methods: no type has more than maxTypeMethods methods
// (counting those declared in its package's test files), but those of
// wideTypesAllowed.
func TestTypesAtMost20Methods(t *testing.T) {
	m := load(t)
	type typeKey struct{ dir, pkg, name string }
	count := map[typeKey]int{}
	first := map[typeKey]token.Position{}
	for _, src := range m.files {
		for _, decl := range src.file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			k := typeKey{path.Dir(src.rel), src.file.Name.Name, receiverType(fn.Recv.List[0].Type)}
			count[k]++
			if p, ok := first[k]; !ok || m.fset.Position(fn.Pos()).Filename < p.Filename {
				first[k] = m.fset.Position(fn.Pos())
			}
		}
	}
	var found []violation
	for k, n := range count {
		name := k.dir + "." + k.name
		if n <= maxTypeMethods || wideTypesAllowed[name] {
			continue
		}
		found = append(found, violation{
			pos: first[k],
			key: "type " + name,
			msg: fmt.Sprintf("type %s has %d methods (at most %d)", name, n, maxTypeMethods),
		})
	}
	report(t, "type", found)
}

// TestCommentsCiteOnlyTheRepository: no comment cites a document outside the
// repository (outsideDocument).
func TestCommentsCiteOnlyTheRepository(t *testing.T) {
	m := load(t)
	var found []violation
	for _, src := range m.files {
		for _, group := range src.file.Comments {
			for _, c := range group.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if !outsideDocument.MatchString(line) {
						continue
					}
					pos := m.fset.Position(c.Pos())
					pos.Line += i
					text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "//"))
					found = append(found, violation{
						pos: pos,
						key: "comment " + src.rel + ": " + text,
						msg: "comment cites a document outside the repository: " + text,
					})
				}
			}
		}
	}
	report(t, "comment", found)
}

// TestOnlyStoreReadsStoreURLs: outside internal/store (test files aside) no
// code tells the store backends apart by their URL: no string literal
// "postgres://" or "postgresql://", and no comparison (==, !=, a switch case)
// with "sqlite".
func TestOnlyStoreReadsStoreURLs(t *testing.T) {
	m := load(t)
	var found []violation
	for _, src := range m.files {
		if strings.HasPrefix(src.rel, "internal/store/") || strings.HasSuffix(src.rel, "_test.go") {
			continue
		}
		for _, decl := range src.file.Decls {
			name := declName(decl)
			for _, lit := range storeURLTests(decl) {
				found = append(found, violation{
					pos: m.fset.Position(lit.Pos()),
					key: "store-url " + src.rel + " " + name + " " + unquote(lit.Value),
					msg: fmt.Sprintf("%s tells a store URL by %s: only internal/store may", name, lit.Value),
				})
			}
		}
	}
	report(t, "store-url", found)
}

// storeURLTests lists the literals in decl that test a store URL's backend:
// every "postgres://" and "postgresql://", and "sqlite" where it is compared
// or is a switch case.
func storeURLTests(decl ast.Decl) []*ast.BasicLit {
	var lits []*ast.BasicLit
	isSQLite := func(x ast.Expr) {
		if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING && unquote(lit.Value) == "sqlite" {
			lits = append(lits, lit)
		}
	}
	ast.Inspect(decl, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING && slices.Contains(storeURLPrefixes, strconv.Quote(unquote(x.Value))) {
				lits = append(lits, x)
			}
		case *ast.BinaryExpr:
			if x.Op == token.EQL || x.Op == token.NEQ {
				isSQLite(x.X)
				isSQLite(x.Y)
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				isSQLite(e)
			}
		}
		return true
	})
	return lits
}

// unquote is the value of a Go string literal ("" if it is not one).
func unquote(lit string) string {
	s, err := strconv.Unquote(lit)
	if err != nil {
		return ""
	}
	return s
}
