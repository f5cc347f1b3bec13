package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

const completionUsage = `Usage: herald completion bash|zsh|fish

Prints a shell completion script for herald: its commands, the resources'
verbs, each one's flags, and the values of the flags that take a fixed set.
Load it in the shell's start-up file:

  bash   source <(herald completion bash)          (in ~/.bashrc)
  zsh    source <(herald completion zsh)           (in ~/.zshrc; it uses bashcompinit)
  fish   herald completion fish > ~/.config/fish/completions/herald.fish
`

// compNode is one command line herald completes: the words after herald
// that reach it ("subscriptions create"), the words that may follow, and
// its flags.
type compNode struct {
	path  string
	words []string
	flags []compFlag
}

// compFlag is a flag as completion knows it: its name, the values it
// takes when they are a fixed set, whether it names a file, and whether
// it takes no value.
type compFlag struct {
	name         string
	values       []string
	file, isBool bool
}

func runCompletion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelpFlag(args[0]) {
		fmt.Fprint(stdout, completionUsage)
		return 0
	}
	gen := map[string]func(io.Writer, []compNode){"bash": writeBash, "zsh": writeZsh, "fish": writeFish}
	if len(args) != 1 || gen[args[0]] == nil {
		fmt.Fprintf(stderr, "herald completion: want bash, zsh or fish, not %q\n\n%s", args, completionUsage)
		return 2
	}
	gen[args[0]](stdout, completionNodes())
	return 0
}

// legacyFlagSets are the flag sets of herald's other commands, by the
// words that reach them. herald bench has none here: its flags are
// herald-bench's (bench.go), not this binary's.
var legacyFlagSets = map[string]func(io.Writer) *flag.FlagSet{
	"serve":       func(w io.Writer) *flag.FlagSet { fs, _ := newServeFlags(w); return fs },
	"sink":        func(w io.Writer) *flag.FlagSet { fs, _ := newSinkFlags(w); return fs },
	"pull":        func(w io.Writer) *flag.FlagSet { fs, _, _ := newPullFlags(w); return fs },
	"filter test": func(w io.Writer) *flag.FlagSet { fs, _, _ := newFilterFlags(w); return fs },
	"policy show": func(w io.Writer) *flag.FlagSet { fs, _, _ := newPolicyShowFlags(w); return fs },
	"migrate":     func(w io.Writer) *flag.FlagSet { fs, _, _ := newMigrateFlags(w); return fs },
	"version":     func(w io.Writer) *flag.FlagSet { fs, _ := newVersionFlags(w); return fs },
}

// completionNodes returns every command line herald completes, from the
// commands table, the resources table and the flag sets, sorted by path.
func completionNodes() []compNode {
	top := append(slices.Sorted(func(yield func(string) bool) {
		for name := range commands {
			if !yield(name) {
				return
			}
		}
	}), "help")
	nodes := []compNode{
		{path: "", words: top},
		{path: "help", words: top[:len(top)-1]},
		{path: "filter", words: []string{"test"}},
		{path: "policy", words: []string{"list", "show"}},
		{path: "policy list"},
		{path: "completion", words: []string{"bash", "zsh", "fish"}},
	}
	for path, mk := range legacyFlagSets {
		nodes = append(nodes, compNode{path: path, flags: compFlags(mk(io.Discard), nil)})
	}
	for _, res := range resources {
		nodes = append(nodes, compNode{path: res.name, words: res.verbNames()})
		for _, v := range res.verbs {
			fs, _, _ := v.flagSet(res, io.Discard)
			nodes = append(nodes, compNode{path: res.name + " " + v.name, flags: compFlags(fs, append(v.commonFlags(res), v.flags...))})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].path < nodes[j].path })
	return nodes
}

// compFlags returns fs's flags, with the values and kinds specs say.
func compFlags(fs *flag.FlagSet, specs []flagSpec) []compFlag {
	var out []compFlag
	fs.VisitAll(func(f *flag.Flag) {
		cf := compFlag{name: f.Name, file: f.Name == "file" || f.Name == "event" || strings.HasSuffix(f.Name, "-file")}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			cf.isBool = true
		}
		for _, s := range specs {
			if s.name == f.Name {
				cf.values = s.values
			}
		}
		out = append(out, cf)
	})
	return out
}

// dashed is a flag as typed: -o, --name.
func (f compFlag) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// writeBash writes the bash completion function: it walks the words typed
// so far through the known paths, then offers the path's words, its flags,
// or the values of the flag before the cursor.
func writeBash(w io.Writer, nodes []compNode) {
	fmt.Fprint(w, `# bash completion for herald (herald completion bash)
_herald() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local path="" next i
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -* ]] && break
        next="${path:+$path }${COMP_WORDS[i]}"
        case "$next" in
`)
	var paths []string
	for _, n := range nodes {
		if n.path != "" {
			paths = append(paths, shellQuote(n.path))
		}
	}
	fmt.Fprintf(w, "            %s) path=\"$next\" ;;\n", strings.Join(paths, "|"))
	fmt.Fprint(w, `            *) break ;;
        esac
    done
    local words="" flags="" values="" file=""
    case "$path" in
`)
	for _, n := range nodes {
		writeBashNode(w, n)
	}
	fmt.Fprint(w, `    esac
    if [[ -n $file ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ -n $values ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}
complete -F _herald herald
`)
}

func writeBashNode(w io.Writer, n compNode) {
	fmt.Fprintf(w, "        %s)\n", shellQuote(n.path))
	fmt.Fprintf(w, "            words=%s\n", shellQuote(strings.Join(n.words, " ")))
	var names []string
	for _, f := range n.flags {
		names = append(names, f.dashed())
	}
	fmt.Fprintf(w, "            flags=%s\n", shellQuote(strings.Join(names, " ")))
	var cases []string
	for _, f := range n.flags {
		switch {
		case f.file:
			cases = append(cases, fmt.Sprintf("                %s|-%s) file=1 ;;\n", f.dashed(), strings.TrimLeft(f.dashed(), "-")))
		case len(f.values) > 0:
			cases = append(cases, fmt.Sprintf("                %s) values=%s ;;\n", f.dashed(), shellQuote(strings.Join(f.values, " "))))
		}
	}
	if len(cases) > 0 {
		fmt.Fprint(w, "            case \"$prev\" in\n"+strings.Join(cases, "")+"            esac\n")
	}
	fmt.Fprint(w, "            ;;\n")
}

// writeZsh writes the bash function for zsh's bashcompinit.
func writeZsh(w io.Writer, nodes []compNode) {
	fmt.Fprint(w, "#compdef herald\n# zsh completion for herald (herald completion zsh): the bash one, through bashcompinit\nautoload -U +X bashcompinit && bashcompinit\n")
	writeBash(w, nodes)
}

// writeFish writes fish complete commands, each under the path it
// belongs to (__herald_at).
func writeFish(w io.Writer, nodes []compNode) {
	var paths []string
	for _, n := range nodes {
		if n.path != "" {
			paths = append(paths, shellQuote(n.path))
		}
	}
	fmt.Fprintf(w, `# fish completion for herald (herald completion fish)
function __herald_path
    set -l path
    for w in (commandline -opc)[2..-1]
        string match -q -- '-*' $w; and break
        set -l next (string join ' ' $path $w)
        contains -- $next %s; or break
        set path $path $w
    end
    string join ' ' $path
end
function __herald_at
    set -l p (__herald_path)
    test "$p" = "$argv[1]"
end
complete -c herald -f
`, strings.Join(paths, " "))
	for _, n := range nodes {
		cond := `"__herald_at '` + n.path + `'"` // paths are words of [a-z-]
		if len(n.words) > 0 {
			fmt.Fprintf(w, "complete -c herald -n %s -a %s\n", cond, shellQuote(strings.Join(n.words, " ")))
		}
		for _, f := range n.flags {
			opt := "-l " + f.name
			if len(f.name) == 1 {
				opt = "-s " + f.name
			}
			switch {
			case f.file:
				opt += " -r -F"
			case len(f.values) > 0:
				opt += " -x -a " + shellQuote(strings.Join(f.values, " "))
			case !f.isBool:
				opt += " -x"
			}
			fmt.Fprintf(w, "complete -c herald -n %s %s\n", cond, opt)
		}
	}
}

// shellQuote quotes s in single quotes for bash, zsh and fish.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
