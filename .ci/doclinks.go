// Command doclinks checks the relative links of README.md and docs/*.md: each
// link's file exists, and each #anchor names a heading of the page it points
// into (as GitHub makes anchors from headings). Links to other sites are not
// followed. It prints each broken link as FILE:LINE: TARGET: WHY and exits 1
// when there is one. Run from the repository root: go run .ci/doclinks.go
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	linkRe    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	codeRe    = regexp.MustCompile("`[^`]*`")
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineRe  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

func main() {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		fail(err)
	}
	files = append([]string{"README.md"}, files...)
	broken := 0
	for _, f := range files {
		problems, err := check(f)
		if err != nil {
			fail(err)
		}
		for _, p := range problems {
			fmt.Println(p)
		}
		broken += len(problems)
	}
	if broken > 0 {
		fmt.Printf("doclinks: %d broken links\n", broken)
		os.Exit(1)
	}
	fmt.Printf("doclinks: every relative link and anchor of %d pages resolves\n", len(files))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "doclinks:", err)
	os.Exit(2)
}

// check returns the broken links of the Markdown file f.
func check(f string) ([]string, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, l := range links(string(b)) {
		if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
			continue
		}
		if why := resolve(f, l.target); why != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", f, l.line, l.target, why))
		}
	}
	return problems, nil
}

// resolve says why target, a link in file from, does not resolve ("" when
// it does).
func resolve(from, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	page := from
	if path != "" {
		page = filepath.Join(filepath.Dir(from), path)
		if _, err := os.Stat(page); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(page, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	b, err := os.ReadFile(page)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(b))[anchor] {
		return "no heading " + page + " has this anchor"
	}
	return ""
}

type link struct {
	target string
	line   int
}

// links returns the inline links of doc outside code blocks and code spans.
// A link's text may run over lines; its target may not.
func links(doc string) []link {
	text := strings.Join(outsideFences(doc), "\n")
	// Blank out code spans, keeping their newlines so that lines still count.
	text = codeRe.ReplaceAllStringFunc(text, func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	})
	var out []link
	for _, m := range linkRe.FindAllStringSubmatchIndex(text, -1) {
		out = append(out, link{
			target: text[m[2]:m[3]],
			line:   strings.Count(text[:m[2]], "\n") + 1,
		})
	}
	return out
}

// outsideFences returns doc's lines with those of fenced code blocks
// (fences included) blanked, so that line numbers stay the same.
func outsideFences(doc string) []string {
	lines := strings.Split(doc, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// anchors returns the anchors GitHub makes from doc's headings: the text
// as shown, in lower case, without punctuation, spaces as hyphens; a
// repeated one gets -1, -2, … in order.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range outsideFences(doc) {
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		text := inlineRe.ReplaceAllString(m[2], "$1")
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
				slug.WriteRune(r)
			}
		}
		a := slug.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}
