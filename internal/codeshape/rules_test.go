package codeshape

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// parseSource parses src as the file rel of the module.
func parseSource(t *testing.T, fset *token.FileSet, rel, src string) source {
	t.Helper()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return source{rel: rel, file: f}
}

// funcOfLines is a function named name that spans n lines, func keyword to
// closing brace.
func funcOfLines(name string, n int) string {
	return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

// TestLongFunctionsCountsLines: a function of 91 lines is named, one of 90 is
// not, and a long function literal is named after its declaration.
func TestLongFunctionsCountsLines(t *testing.T) {
	fset := token.NewFileSet()
	literal := "var table = []func(){\n\tfunc() {\n" + strings.Repeat("\t\t_ = 0\n", 89) + "\t},\n}\n"
	src := "package p\n\n" + funcOfLines("ok", 90) + funcOfLines("long", 91) + literal
	got := longFunctions(fset, parseSource(t, fset, "p/p.go", src))
	var keys []string
	for _, v := range got {
		keys = append(keys, v.key)
	}
	want := []string{"func p/p.go long", "func p/p.go func literal in table"}
	if strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Fatalf("longFunctions named %q, want %q", keys, want)
	}
	if got[0].pos.Line != 93 {
		t.Errorf("long is reported at line %d, want 93", got[0].pos.Line)
	}
}

// TestStoreURLTestsFindsComparisons: the URL prefixes and comparisons with
// "sqlite" are found; "sqlite" as a value and a help text naming postgres://
// are not.
func TestStoreURLTestsFindsComparisons(t *testing.T) {
	fset := token.NewFileSet()
	src := `package p

func f(s string) bool {
	def := "sqlite"
	help := "sqlite, or a postgres:// URL"
	switch s {
	case "sqlite":
	}
	return s == "sqlite" || strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, ` + "`postgresql://`" + `) || def == help
}
`
	f := parseSource(t, fset, "p/p.go", src)
	var got []string
	for _, lit := range storeURLTests(f.file.Decls[0]) {
		got = append(got, unquote(lit.Value))
	}
	want := "sqlite|sqlite|postgres://|postgresql://"
	if strings.Join(got, "|") != want {
		t.Fatalf("storeURLTests found %q, want %s", got, want)
	}
}

// TestOutsideDocumentMatches: the design document and the shared seeds are
// matched, in any of the ways the tree cited them; words that merely contain
// them are not.
func TestOutsideDocumentMatches(t *testing.T) {
	for line, want := range map[string]bool{
		"The encodings (DESIGN.md §9.5):":                true,
		"advanced filters (DESIGN §9.6):":                true,
		"and IsNullOrUndefined (DESIGN":                  true,
		"(shared/seeds/azure-event-grid-delivery.pt.md)": true,
		"see ../shared/notes.md":                         true,
		"deep-nesting seeds make minimization slow":      false,
		"a DESIGNATED receiver, the design of the test":  false,
		"the shape of River's rivershared/startstop":     false,
		"docs/architecture.md lists the files":           false,
	} {
		if got := outsideDocument.MatchString(line); got != want {
			t.Errorf("outsideDocument.MatchString(%q) = %v, want %v", line, got, want)
		}
	}
}
