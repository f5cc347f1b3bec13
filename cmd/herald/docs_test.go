package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsDocumentServeFlags checks that docs/configuration.md names every
// herald serve flag (--name) and its environment variable (HERALD_NAME, see
// applyEnv).
func TestDocsDocumentServeFlags(t *testing.T) {
	section := docSectionT(t, "docs/configuration.md", "# Configuration")
	fs, _ := newServeFlags(io.Discard)
	var missing []string
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		for _, name := range []string{"--" + f.Name, envName(f.Name)} {
			// The name must stand alone: --window is not --health-window,
			// HERALD_WINDOW is not HERALD_HEALTH_WINDOW.
			re := regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_-])`)
			if !re.MatchString(section) {
				missing = append(missing, name)
			}
		}
	})
	if n == 0 {
		t.Fatal("herald serve has no flags")
	}
	if len(missing) > 0 {
		t.Errorf("docs/configuration.md does not mention %d of herald serve's %d flags and environment variables:\n  %s",
			len(missing), 2*n, strings.Join(missing, "\n  "))
	}
}

// TestDocsDocumentCommands checks that docs/commands.md names every
// command, and every flag of those whose flags it lists (all but serve's,
// in docs/configuration.md; bench's are herald-bench's, in
// docs/benchmarks.md).
func TestDocsDocumentCommands(t *testing.T) {
	section := docSectionT(t, "docs/commands.md", "# Commands")
	for name := range commands {
		if !strings.Contains(section, "`herald "+name) {
			t.Errorf("docs/commands.md lacks herald %s", name)
		}
	}
	for name, c := range commandsUnderTest(t) {
		if name == "serve" {
			continue
		}
		c.flags(io.Discard).VisitAll(func(f *flag.Flag) {
			if !strings.Contains(section, "--"+f.Name) {
				t.Errorf("docs/commands.md lacks herald %s --%s", name, f.Name)
			}
		})
	}
}

// docSectionT returns the section under heading of the Markdown file at
// path (from the repository root), failing the test when there is none.
func docSectionT(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	section := docSection(string(b), heading)
	if section == "" {
		t.Fatalf("%s has no %q section", path, heading)
	}
	return section
}

// docSection returns the text from the heading line to the next heading of
// the same or a higher level (outside code blocks), or "" when the heading is
// absent.
func docSection(doc, heading string) string {
	lines := strings.Split(doc, "\n")
	level := strings.Count(strings.Fields(heading)[0], "#")
	start, fenced := -1, false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		if fenced {
			continue // a "# comment" in a code block is not a heading
		}
		if start < 0 {
			if strings.TrimSpace(l) == heading {
				start = i
			}
			continue
		}
		if h := strings.Fields(l); len(h) > 0 && strings.Trim(h[0], "#") == "" && len(h[0]) <= level {
			return strings.Join(lines[start:i], "\n")
		}
	}
	if start < 0 {
		return ""
	}
	return strings.Join(lines[start:], "\n")
}
