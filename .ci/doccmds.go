// Command doccmds checks the herald command lines of the sh blocks of the
// pages it is given (those whose samples cannot run on a CI machine:
// systemd, Helm, containers, hour-long benchmarks): each invocation of
// herald (a word whose base name is herald, or herald-… but herald-bench,
// followed by one of herald's commands: a release binary, /tmp/herald-after)
// or of herald-bench is run with -h, which must succeed, and every flag the
// line gives it (--name or -name, before a shell operator or a comment)
// must be in that help. A resource's or policy's, filter's or completion's
// verb is part of the command ("herald subscriptions create -h"). Lines
// ending in a backslash are joined first. It prints each problem as
// FILE:LINE: WHY and exits 1 when there is one, else says how many
// invocations it checked.
//
// Usage, from the repository root: go run .ci/doccmds.go HERALD HERALD_BENCH FILE…
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// commands are herald's first words; verbed are those whose next word,
// the verb, is part of the command too.
var (
	commands = map[string]bool{"serve": true, "migrate": true, "sink": true, "pull": true, "bench": true, "version": true,
		"policy": true, "filter": true, "completion": true, "help": true}
	verbed = map[string]bool{"subscriptions": true, "events": true, "deliveries": true, "dead-letters": true,
		"endpoints": true, "accounts": true, "keys": true, "jobs": true, "policy": true, "filter": true}
	heraldRe = regexp.MustCompile(`^herald(-[A-Za-z0-9.]+)?$`)
	ends     = map[string]bool{"&": true, "&&": true, "|": true, "||": true, ";": true, ">": true, "<": true, "2>&1": true}
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: go run .ci/doccmds.go HERALD HERALD_BENCH FILE…")
		os.Exit(2)
	}
	bins := map[string]string{"herald": os.Args[1], "herald-bench": os.Args[2]}
	problems, checked := 0, 0
	for _, f := range os.Args[3:] {
		lines, err := shLines(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, l := range lines {
			for _, inv := range invocations(strings.Fields(l.text)) {
				checked++
				if why := check(bins, inv); why != "" {
					fmt.Printf("%s:%d: %s: %s\n", f, l.n, strings.Join(inv.words, " "), why)
					problems++
				}
			}
		}
	}
	if problems > 0 {
		os.Exit(1)
	}
	fmt.Printf("doccmds: %d herald command lines parse\n", checked)
}

// line is a command line of an sh block: its text (continuations joined)
// and the number of its first line.
type line struct {
	n    int
	text string
}

// shLines returns the lines of file's sh blocks, a line ending in a
// backslash joined to the next.
func shLines(file string) ([]line, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []line
	in, joining := false, false
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		t := sc.Text()
		switch {
		case !in && t == "```sh":
			in = true
		case in && t == "```":
			in, joining = false, false
		case in && joining:
			out[len(out)-1].text += " " + strings.TrimSuffix(t, "\\")
		case in:
			out = append(out, line{n, strings.TrimSuffix(t, "\\")})
		}
		joining = in && strings.HasSuffix(t, "\\")
	}
	return out, sc.Err()
}

// invocation is a herald or herald-bench command of a line: which binary,
// its command words, and the flags given.
type invocation struct {
	bin   string
	words []string
	flags []string
}

// invocations returns the herald and herald-bench invocations among a
// line's words.
func invocations(words []string) []invocation {
	var out []invocation
	for i, w := range words {
		base := filepath.Base(strings.Trim(w, `"'(`))
		var inv invocation
		switch {
		case base == "herald-bench":
			inv = invocation{bin: "herald-bench"}
		case heraldRe.MatchString(base) && i+1 < len(words) && (commands[words[i+1]] || verbed[words[i+1]]):
			inv = invocation{bin: "herald", words: []string{words[i+1]}}
			if verbed[words[i+1]] && i+2 < len(words) && !strings.HasPrefix(words[i+2], "-") {
				inv.words = append(inv.words, words[i+2])
			}
		default:
			continue
		}
		for _, a := range words[i+1:] {
			if ends[a] || strings.HasPrefix(a, "#") || strings.HasPrefix(a, "$(") || strings.HasSuffix(a, ";") {
				break
			}
			if strings.HasPrefix(a, "-") && len(a) > 1 && a != "--" {
				inv.flags = append(inv.flags, strings.SplitN(a, "=", 2)[0])
			}
		}
		out = append(out, inv)
	}
	return out
}

// check runs the invocation's command with -h and returns what is wrong:
// "" when the help is printed and names every flag.
func check(bins map[string]string, inv invocation) string {
	args := append(append([]string{}, inv.words...), "-h")
	out, err := exec.Command(bins[inv.bin], args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s %s: %v: %s", inv.bin, strings.Join(args, " "), err, firstLine(string(out)))
	}
	help := string(out)
	for _, f := range inv.flags {
		name := strings.TrimLeft(f, "-")
		if name == "h" || name == "help" {
			continue
		}
		if !strings.Contains(help, "--"+name) && !strings.Contains(help, "-"+name+" ") && !strings.Contains(help, "-"+name+"\n") {
			return fmt.Sprintf("%s %s: the help has no flag %s", inv.bin, strings.Join(inv.words, " "), f)
		}
	}
	return ""
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
