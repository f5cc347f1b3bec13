package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// forEachVerb calls f with every verb of the resources table.
func forEachVerb(f func(res *resource, v *verb)) {
	for _, res := range resources {
		for _, v := range res.verbs {
			f(res, v)
		}
	}
}

// verbArgs are arguments that satisfy v's positional arguments.
func verbArgs(res *resource, v *verb) []string {
	args := []string{res.name, v.name}
	for _, a := range v.args {
		if !strings.HasPrefix(a, "[") {
			args = append(args, "x_1")
		}
	}
	return args
}

// noAPI is an API that fails the test when anything reaches it: a usage
// error sends nothing.
func noAPI(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused command line sent %s %s", r.Method, r.URL)
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// badFlagValues are values each kind of flag refuses.
var badFlagValues = map[flagKind][]string{
	kindString:    {""},
	kindList:      {""},
	kindInt:       {"x", "1.5"},
	kindBool:      {"maybe"},
	kindJSON:      {"{", `{"a":1} 2`},
	kindDuration:  {"5", "soon"},
	kindDurations: {"5", "10s,soon", "10s,,1m"},
	kindTime:      {"yesterday", "2026-01-05"},
	kindNumber:    {"x", "NaN", "Inf"},
}

// TestVerbsRefuseBadFlags: for every verb of every resource, an unknown
// flag, every bad value of each of its flags (by kind, plus a value
// outside a fixed set or an int's range), a missing or extra argument,
// and a bad --api or --timeout, exit 2 with nothing on stdout, one line
// on stderr naming the flag (not the usage), and no request sent.
func TestVerbsRefuseBadFlags(t *testing.T) {
	t.Setenv("HERALD_API", noAPI(t))
	t.Setenv("HERALD_API_KEY", "test-key-0123456789")
	forEachVerb(func(res *resource, v *verb) {
		base := verbArgs(res, v)
		check := func(extra []string, want string) {
			t.Helper()
			args := append(append([]string{}, base...), extra...)
			code, out, errOut := runHerald(t, args...)
			first, rest, _ := strings.Cut(errOut, "\n")
			if code != 2 || out != "" || !strings.Contains(first, want) || rest != "" {
				t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", args, code, firstLines(out), firstLines(errOut), want)
			}
		}
		check([]string{"--no-such-flag"}, "-no-such-flag")
		check([]string{"--timeout", "0s"}, "--timeout")
		check([]string{"--api", "ftp://x"}, "--api")
		if v.list {
			check([]string{"--limit", "1001"}, "-limit")
		}
		for _, spec := range append(v.commonFlags(res), v.flags...) {
			bad := append([]string{}, badFlagValues[spec.kind]...)
			if len(spec.values) > 0 {
				bad = append(bad, "not-"+spec.values[0])
			}
			if spec.kind == kindInt {
				bad = append(bad, strconv.Itoa(spec.min-1), strconv.Itoa(spec.max+1))
			}
			for _, val := range bad {
				if spec.name == "file" {
					continue // a value is a file name; see TestVerbBodies
				}
				check([]string{"--" + spec.name + "=" + val}, "-"+spec.name)
			}
		}
		if len(v.args) == 0 || !isVariadic(v.args[len(v.args)-1]) {
			check([]string{"x_2"}, "unexpected argument")
		}
		if len(v.args) > 0 && !strings.HasPrefix(v.args[0], "[") {
			args := []string{res.name, v.name}
			if code, out, errOut := runHerald(t, args...); code != 2 || out != "" || !strings.Contains(errOut, "name the") {
				t.Errorf("herald %q: exit %d, stderr %q; want exit 2 asking for the argument", args, code, errOut)
			}
		}
	})
}

// TestVerbBodies: --file must hold one JSON object that the operation
// takes (an unknown member or a member of the wrong type is named), and
// endpoints update must say whether it sets or removes the rate limit;
// each refusal exits 2 naming --file (or the flags) and sends nothing.
func TestVerbBodies(t *testing.T) {
	t.Setenv("HERALD_API", noAPI(t))
	t.Setenv("HERALD_API_KEY", "test-key-0123456789")
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"subscriptions", "create", "--file", file("array.json", `[1]`)}, "--file"},
		{[]string{"subscriptions", "create", "--file", file("broken.json", `{"name":`)}, "--file"},
		{[]string{"subscriptions", "create", "--file", file("two.json", `{} {}`)}, "--file"},
		{[]string{"subscriptions", "create", "--file", filepath.Join(dir, "missing.json")}, "--file"},
		{[]string{"subscriptions", "create", "--file", file("unknown.json", `{"name":"a","colour":"red"}`)}, `"colour"`},
		{[]string{"subscriptions", "update", "sub_x", "--file", file("type.json", `{"event_types":"a"}`)}, "event_types"},
		{[]string{"accounts", "create", "--file", file("settings.json", `{"settings":{"x":1}}`)}, `"x"`},
		{[]string{"endpoints", "update", "ep_x"}, "--no-rate-limit"},
		{[]string{"endpoints", "update", "ep_x", "--no-rate-limit", "--burst", "3"}, "--no-rate-limit"},
		{[]string{"subscriptions", "recover", "sub_x", "--since", "2026-01-05T09:00:00Z", "--status", "pending"}, "-status"},
	} {
		code, out, errOut := runHerald(t, c.args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != 2 || out != "" || !strings.Contains(first, c.want) {
			t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want exit 2 naming %s", c.args, code, out, errOut, c.want)
		}
	}
}

// TestVerbHelp: herald RESOURCE -h, herald help RESOURCE, herald RESOURCE
// VERB -h and herald help RESOURCE VERB print on stdout, exit 0; a
// resource's help names each verb, a verb's every flag.
func TestVerbHelp(t *testing.T) {
	for _, res := range resources {
		for _, args := range [][]string{{res.name, "-h"}, {"help", res.name}} {
			code, out, errOut := runHerald(t, args...)
			if code != 0 || errOut != "" || !strings.Contains(out, "Usage: herald "+res.name) {
				t.Errorf("herald %q: exit %d, stderr %q", args, code, errOut)
			}
			for _, v := range res.verbs {
				if !strings.Contains(out, "  "+v.name+" ") {
					t.Errorf("herald %q lacks the verb %s", args, v.name)
				}
			}
		}
		for _, v := range res.verbs {
			for _, args := range [][]string{{res.name, v.name, "-h"}, {"help", res.name, v.name}} {
				code, out, errOut := runHerald(t, args...)
				if code != 0 || errOut != "" || !strings.Contains(out, "Usage: "+v.synopsis(res)) {
					t.Errorf("herald %q: exit %d, stdout %q, stderr %q", args, code, firstLines(out), errOut)
				}
				fs, _, _ := v.flagSet(res, io.Discard)
				fs.VisitAll(func(f *flag.Flag) {
					if !strings.Contains(out, "-"+f.Name+" ") && !strings.Contains(out, "-"+f.Name+"\n") {
						t.Errorf("herald %q lacks -%s", args, f.Name)
					}
				})
			}
		}
		code, out, errOut := runHerald(t, res.name, "nope")
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown verb "nope"`) || !strings.Contains(errOut, "Usage") {
			t.Errorf("herald %s nope: exit %d, stderr %q", res.name, code, firstLines(errOut))
		}
	}
}

// TestDocsDocumentVerbs: docs/commands.md names every verb of every
// resource (herald RESOURCE in its table, the verb beside it) and every
// flag of each.
func TestDocsDocumentVerbs(t *testing.T) {
	section := docSectionT(t, "docs/commands.md", "## Resource verbs")
	forEachVerb(func(res *resource, v *verb) {
		row := ""
		for _, line := range strings.Split(section, "\n") {
			if strings.HasPrefix(line, "| `herald "+res.name+"` |") {
				row = line
			}
		}
		if !strings.Contains(row, "`"+v.name) {
			t.Errorf("docs/commands.md's row of herald %s lacks %s", res.name, v.name)
		}
		fs, _, _ := v.flagSet(res, io.Discard)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(section, "-"+f.Name) {
				t.Errorf("docs/commands.md lacks herald %s %s -%s", res.name, v.name, f.Name)
			}
		})
	})
}

// TestOutputCells: a table cell shows null and "" as -, joins a list of
// strings, escapes control characters and cuts long values.
func TestOutputCells(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, "-"},
		{"", "-"},
		{[]any{"a", "b"}, "a,b"},
		{[]any{}, "-"},
		{map[string]any{"preset": "sap"}, `{"preset":"sap"}`},
		{"line\nbreak\t", `"line\nbreak\t"`},
		{strings.Repeat("x", 100), strings.Repeat("x", maxCell-1) + "…"},
	} {
		if got := cell(c.in); got != c.want {
			t.Errorf("cell(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCompletionScripts: herald completion bash|zsh|fish prints a script
// for each shell; the bash one passes bash -n and, run in bash, completes
// commands, verbs, flags and flag values from the tables; the zsh one is
// the bash one under bashcompinit; the fish one has a line for every verb
// and flag. A shell it does not know exits 2.
func TestCompletionScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runHerald(t, "completion", sh)
		if code != 0 || errOut != "" || !strings.Contains(out, "herald") {
			t.Fatalf("herald completion %s: exit %d, stderr %q", sh, code, errOut)
		}
		scripts[sh] = out
	}
	if code, _, errOut := runHerald(t, "completion", "tcsh"); code != 2 || !strings.Contains(errOut, `"tcsh"`) {
		t.Errorf("herald completion tcsh: exit %d, stderr %q; want exit 2 naming it", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "herald.bash")
	if err := os.WriteFile(path, []byte(scripts["bash"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	if !strings.HasSuffix(scripts["zsh"], scripts["bash"]) || !strings.Contains(scripts["zsh"], "bashcompinit") {
		t.Error("the zsh script is not the bash one under bashcompinit")
	}
	for _, c := range completionCases {
		words := strings.Split(c.line, " ")
		script := fmt.Sprintf("source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_herald\necho \"${COMPREPLY[*]}\"\n",
			path, shellWords(words), len(words)-1)
		out, err := exec.Command(bash, "-c", script).CombinedOutput()
		got := strings.Fields(string(out))
		sort.Strings(got)
		want := strings.Fields(c.want)
		sort.Strings(want)
		if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("completing %q: %q (%v), want %q", c.line, out, err, c.want)
		}
	}
	forEachVerb(func(res *resource, v *verb) {
		cond := `"__herald_at '` + res.name + " " + v.name + `'"`
		if !strings.Contains(scripts["fish"], "-n "+cond+" -s o -x -a 'table json'") {
			t.Errorf("the fish script lacks -o for herald %s %s", res.name, v.name)
		}
		for _, f := range v.flags {
			if !strings.Contains(scripts["fish"], "-n "+cond+" -l "+f.name) {
				t.Errorf("the fish script lacks --%s for herald %s %s", f.name, res.name, v.name)
			}
		}
	})
}

// completionCases are command lines and the words completing their last
// word offers, in every shell.
var completionCases = []struct{ line, want string }{
	{"herald sub", "subscriptions"},
	{"herald dead", "dead-letters"},
	{"herald comp", "completion"},
	{"herald subscriptions rec", "recover receive"},
	{"herald subscriptions create --deli", "--delivery-mode --delivery-schema"},
	{"herald subscriptions create --delivery-mode ", "push pull"},
	{"herald deliveries list --status dead", "dead_lettered"},
	{"herald endpoints list -o ", "table json"},
	{"herald filter ", "test"},
	{"herald pull --max-w", "--max-wait"},
	{"herald help dead", "dead-letters"},
}

// TestCompletionInZshAndFish: the zsh script, sourced in zsh after
// compinit, offers what bash offers for each of completionCases (zsh's own
// completion system then filters the candidates by the typed prefix, so
// the check is that they include the wanted ones); the fish script passes
// fish -n and `complete -C` offers exactly the wanted words. Under CI both
// shells must be installed (.ci/run installs them).
func TestCompletionInZshAndFish(t *testing.T) {
	_, zshScript, _ := runHerald(t, "completion", "zsh")
	_, fishScript, _ := runHerald(t, "completion", "fish")
	dir := t.TempDir()
	t.Run("zsh", func(t *testing.T) {
		zsh := lookShell(t, "zsh")
		path := writeScript(t, dir, "herald.zsh", zshScript)
		for _, c := range completionCases {
			words := strings.Split(c.line, " ")
			script := fmt.Sprintf("autoload -Uz compinit && compinit -u -d %s\nsource %s\nemulate sh\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_herald\necho \"${COMPREPLY[*]}\"\n",
				shellQuote(filepath.Join(dir, "zcompdump")), path, shellWords(words), len(words)-1)
			out, err := exec.Command(zsh, "-f", "-c", script).CombinedOutput()
			got := strings.Fields(string(out))
			for _, w := range strings.Fields(c.want) {
				if err != nil || !slices.Contains(got, w) {
					t.Errorf("zsh completing %q: %q (%v), want it to offer %q", c.line, out, err, w)
				}
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		fish := lookShell(t, "fish")
		path := writeScript(t, dir, "herald.fish", fishScript)
		if out, err := exec.Command(fish, "-n", path).CombinedOutput(); err != nil {
			t.Fatalf("fish -n: %v\n%s", err, out)
		}
		for _, c := range completionCases {
			script := fmt.Sprintf("function herald; end; source %s; complete -C %s", path, shellQuote(c.line))
			out, err := exec.Command(fish, "--no-config", "-c", script).CombinedOutput()
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if f := strings.Fields(line); len(f) > 0 {
					got = append(got, f[0]) // a candidate, then its description
				}
			}
			sort.Strings(got)
			want := strings.Fields(c.want)
			sort.Strings(want)
			if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("fish completing %q: %q (%v), want %q", c.line, out, err, c.want)
			}
		}
	})
}

// lookShell finds a shell, skipping the test when it is not installed
// (failing it under CI, which installs it).
func lookShell(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed, and completion tests must run under CI: apt-get install -y %s", name, name)
		}
		t.Skipf("%s is not installed: its completion test skipped", name)
	}
	return path
}

// writeScript writes a completion script to dir/name and returns its path.
func writeScript(t *testing.T, dir, name, script string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellWords quotes words for a bash array.
func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// TestVerbsKeyAndAPI: a verb calls the API of HERALD_API (or --api) with
// HERALD_API_KEY, else the admin key in --data's admin.key, as herald pull
// does (TestClientCommandsReadTheEnvironment); a wrong key is the API's
// 401 on stderr, exit 1. Not parallel: it sets the environment.
func TestVerbsKeyAndAPI(t *testing.T) {
	base := startClientServer(t)
	withKey := t.TempDir()
	if err := os.WriteFile(filepath.Join(withKey, server.AdminKeyFile), []byte(clientTestKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := apiCall(t, base, "/v1/subscriptions", "application/json", `{"name":"orders","delivery_mode":"pull"}`, http.StatusCreated)
	for _, c := range []struct {
		name, api, key string
		args           []string
	}{
		{"HERALD_API and HERALD_API_KEY", base, clientTestKey, nil},
		{"--api and admin.key", "http://127.0.0.1:1", "", []string{"--api", base, "--data", withKey}},
	} {
		t.Setenv("HERALD_API", c.api)
		t.Setenv("HERALD_API_KEY", c.key)
		args := append([]string{"subscriptions", "get", sub}, c.args...)
		code, out, errOut := runHerald(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, sub+"  orders  pull") {
			t.Errorf("%s: herald %q: exit %d, stdout %q, stderr %q", c.name, args, code, out, errOut)
		}
	}
	t.Setenv("HERALD_API", base)
	t.Setenv("HERALD_API_KEY", "wrong-key-0123456789abcdef")
	if code, out, errOut := runHerald(t, "subscriptions", "list", "--data", withKey); code != 1 || out != "" || !strings.HasPrefix(errOut, "herald subscriptions list: 401 ") {
		t.Errorf("a wrong HERALD_API_KEY: exit %d, stdout %q, stderr %q; want exit 1 and the API's 401", code, out, errOut)
	}
}
