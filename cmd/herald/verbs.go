package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-events/herald/client"
)

// resource is one of the API's resources as a command: herald RESOURCE
// VERB [flags] [ARGS]. The resources table (resources.go) drives the
// dispatch, the help, docs/commands.md's test and the completion scripts.
type resource struct {
	name, summary string
	verbs         []*verb
	account       bool // its verbs take --account (every resource but accounts)
}

// verb is one operation of a resource.
type verb struct {
	name, summary string
	// args names the positional arguments; a last one ending in "..."
	// takes one or more values, and in brackets ("[ID...]") none too.
	args    []string
	flags   []flagSpec
	body    bool     // takes --file, the request body, merged with the flags that set a field
	list    bool     // a list: takes --limit, --cursor and --all
	columns []column // its table output (of a list's items); none: KEY VALUE lines
	rows    string   // the member of the answer whose items are the table's rows; "": the answer is the row
	// input returns a new typed request body (a pointer) the body is
	// decoded into, strictly (an unknown member is a usage error); nil: the
	// verb uses the body as it is.
	input func() any
	// check refuses a command line the flags' own checks let through.
	check func(c *call) error
	// run calls the API (a list verb's, for one page). What the verb
	// prints is the API's answer as sent (call.answer); run's value only
	// says an answer without a body (deleted).
	run func(ctx context.Context, c *call) (any, error)
}

// call is one run of a verb: what its command line said, and the client.
type call struct {
	res     *resource
	verb    *verb
	args    []string       // the positional arguments
	set     map[string]any // the verb's own flags given, by name (see flagValue)
	body    map[string]any // --file with the body flags over it; nil when the verb takes no body
	input   any            // the body decoded into the verb's input type
	page    client.ListParams
	cl      *client.Client
	out     string        // -o
	timeout time.Duration // --timeout
	// answer keeps the API's last successful answer, which is what the
	// verb prints: the client's types decode it, the CLI shows it as sent.
	answer *answerKeeper
}

// str returns the string flag name, or "" when it was not given.
func (c *call) str(name string) string { s, _ := c.set[name].(string); return s }

// commonFlags are the flags every verb of res takes besides --api and
// --data (addClientFlags) and its own.
func (v *verb) commonFlags(res *resource) []flagSpec {
	specs := []flagSpec{
		{name: "o", usage: "the output: table (fixed columns) or json (the API's JSON)", values: []string{"table", "json"}, def: "table"},
		{name: "timeout", usage: "how long each request may take", kind: kindDuration, def: client.DefaultTimeout.String()},
	}
	if res.account {
		specs = append(specs, flagSpec{name: "account", usage: "act in this account (an admin key's account_id; default: the key's own)"})
	}
	if v.list {
		specs = append(specs,
			flagSpec{name: "limit", usage: "items a page holds at most (default: the API's, 100)", kind: kindInt, min: 1, max: 1000},
			flagSpec{name: "cursor", usage: "the page after this next_cursor of an earlier list"},
			flagSpec{name: "all", usage: fmt.Sprintf("follow next_cursor to the last page (at most %d items)", maxListAll), kind: kindBool})
	}
	if v.body {
		specs = append(specs, flagSpec{name: "file", usage: "the request body: a file holding a JSON object, or - for standard input; flags that set a field win over it"})
	}
	return specs
}

// flagSet returns the verb's flag set (its output errors to stderr), the
// client flags on it and where its flags' values go.
func (v *verb) flagSet(res *resource, stderr io.Writer) (*flag.FlagSet, *clientFlags, map[string]any) {
	fs := flag.NewFlagSet("herald "+res.name+" "+v.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	set := map[string]any{}
	for _, spec := range append(v.commonFlags(res), v.flags...) {
		usage := spec.usage
		if spec.def != "" {
			usage += " (default " + spec.def + ")"
		}
		fs.Var(&flagValue{spec: spec, set: set}, spec.name, usage)
	}
	fs.Usage = func() { v.printUsage(fs, res) }
	return fs, cf, set
}

// synopsis is the verb's command line: herald RESOURCE VERB [flags] ARGS.
func (v *verb) synopsis(res *resource) string {
	s := "herald " + res.name + " " + v.name + " [flags]"
	for _, a := range v.args {
		s += " " + a
	}
	return s
}

func (v *verb) printUsage(fs *flag.FlagSet, res *resource) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\n", v.synopsis(res), v.summary)
	if v.body {
		fmt.Fprint(w, "The request body is the JSON object of --file, with the fields the flags\nset (they win) over it.\n\n")
	}
	if v.list {
		fmt.Fprint(w, "-o json prints the page as the API answers it, {\"data\": [...],\n\"next_cursor\": \"...\"} (with --all, every item in one data); -o table\nprints its items and, on stderr, the cursor of the next page.\n\n")
	}
	fmt.Fprint(w, clientHelp+"\nFlags:\n")
	printVerbFlags(w, fs, append(v.commonFlags(res), v.flags...))
}

// printVerbFlags lists fs's flags, as flag.PrintDefaults does but naming
// each one's value by its kind (specs; --api and --data are strings).
func printVerbFlags(w io.Writer, fs *flag.FlagSet, specs []flagSpec) {
	fs.VisitAll(func(f *flag.Flag) {
		spec := flagSpec{usage: f.Usage}
		for _, s := range specs {
			if s.name == f.Name {
				spec = s
			}
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		ph := spec.placeholder()
		if spec.name == "" { // --api, --data
			ph = map[string]string{"api": " URL", "data": " DIR"}[f.Name]
		}
		fmt.Fprintf(w, "  %s%s%s\n    \t%s", dash, f.Name, ph, f.Usage)
		if spec.name == "" && f.DefValue != "" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// placeholder names the spec's value in help: " N", " push|pull", none
// for a bool.
func (spec flagSpec) placeholder() string {
	if len(spec.values) > 0 {
		return " " + strings.Join(spec.values, "|")
	}
	switch spec.kind {
	case kindBool:
		return ""
	case kindInt, kindNumber:
		return " N"
	case kindJSON:
		return " JSON"
	case kindDuration:
		return " DURATION"
	case kindDurations:
		return " DURATION[,DURATION...]"
	case kindTime:
		return " TIME"
	}
	if spec.name == "file" {
		return " FILE|-"
	}
	return " TEXT"
}

// runResource is the command of res: herald RESOURCE VERB [flags] [ARGS].
func (res *resource) runResource(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelpFlag(args[0]) {
		w, code := stderr, 2
		if len(args) > 0 {
			w, code = stdout, 0
		} else {
			fmt.Fprintf(w, "herald %s: name a verb\n\n", res.name)
		}
		res.printUsage(w)
		return code
	}
	v := res.verb(args[0])
	if v == nil {
		fmt.Fprintf(stderr, "herald %s: unknown verb %q (the verbs: %s)\n\n", res.name, args[0], strings.Join(res.verbNames(), ", "))
		res.printUsage(stderr)
		return 2
	}
	return v.runVerb(ctx, res, args[1:], stdout, stderr)
}

func (res *resource) verb(name string) *verb {
	for _, v := range res.verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

func (res *resource) verbNames() []string {
	names := make([]string, len(res.verbs))
	for i, v := range res.verbs {
		names[i] = v.name
	}
	return names
}

func (res *resource) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: herald %s VERB [flags] [ARGS]\n\n%s\n\nVerbs:\n", res.name, res.summary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range res.verbs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimPrefix(v.synopsis(res), "herald "+res.name+" "), firstSentence(v.summary))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nherald %s VERB -h lists a verb's flags. %s", res.name, clientHelp)
}

// firstSentence returns s up to its first full stop.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// runVerb parses the verb's command line, calls the API and prints the
// answer: exit 0, 1 for an error of the API or the connection, 2 for a
// usage error.
func (v *verb) runVerb(ctx context.Context, res *resource, args []string, stdout, stderr io.Writer) int {
	fs, cf, set := v.flagSet(res, stderr)
	pos, code, ok := parseVerbArgs(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	c, fromEnv, err := v.newCall(res, fs, cf, set, pos)
	if err != nil {
		return usageError(stderr, fs.Name(), err, fromEnv)
	}
	if c.cl, err = cf.apiClient(c, res); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	result, err := v.call(ctx, c, stderr)
	if err != nil {
		printAPIError(stderr, fs.Name(), err)
		return 1
	}
	if err := printResult(stdout, stderr, c, result); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}

// newCall checks the command line the flags parsed (the client flags
// from HERALD_API and HERALD_DATA when not given) and makes the call. The
// error is a usage error; fromEnv says which flags the environment set.
func (v *verb) newCall(res *resource, fs *flag.FlagSet, cf *clientFlags, set map[string]any, pos []string) (*call, map[string]string, error) {
	fromEnv, err := applyEnv(fs, os.LookupEnv, "api", "data")
	if err == nil {
		err = cf.check()
	}
	if err == nil {
		err = v.checkArgs(pos)
	}
	if err != nil {
		return nil, fromEnv, err
	}
	c := &call{res: res, verb: v, args: pos, set: set, out: "table", timeout: client.DefaultTimeout,
		answer: &answerKeeper{next: http.DefaultTransport}}
	if o, ok := set["o"].(string); ok {
		c.out = o
	}
	if d, ok := set["timeout"].(string); ok {
		if c.timeout, _ = time.ParseDuration(d); c.timeout <= 0 {
			return nil, fromEnv, fmt.Errorf("--timeout %s: must be positive", d)
		}
	}
	if n, ok := set["limit"].(int); ok {
		c.page.Limit = n
	}
	c.page.Cursor = c.str("cursor")
	if v.body {
		if c.body, err = v.buildBody(set); err != nil {
			return nil, fromEnv, err
		}
	}
	if v.input != nil {
		if c.input, err = decodeInput(c.body, v.input()); err != nil {
			return nil, fromEnv, err
		}
	}
	if v.check != nil {
		err = v.check(c)
	}
	return c, fromEnv, err
}

// decodeInput decodes body into in (a pointer) strictly: an unknown member
// or a value of the wrong type is an error naming it and --file.
func decodeInput(body map[string]any, in any) (any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("--file: member %s: want a JSON %s, not %s", te.Field, te.Type, te.Value)
		}
		return nil, fmt.Errorf("--file: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return in, nil
}

// checkArgs checks the positional arguments against v.args: a last one
// ending in "..." takes more, and in brackets ("[ID...]") none too.
func (v *verb) checkArgs(pos []string) error {
	want, variadic := len(v.args), len(v.args) > 0 && isVariadic(v.args[len(v.args)-1])
	if variadic && strings.HasPrefix(v.args[len(v.args)-1], "[") {
		want--
	}
	switch {
	case len(pos) < want:
		return fmt.Errorf("name the %s: %s", strings.ToLower(strings.TrimSuffix(v.args[len(pos)], "...")), strings.Join(v.args, " "))
	case len(pos) > want && !variadic:
		return fmt.Errorf("unexpected argument %q (it takes %s)", pos[want], argsSaid(v.args))
	}
	for _, a := range pos {
		if a == "" || strings.ContainsAny(a, "/?#%\x00\r\n") || len(a) > 200 {
			return fmt.Errorf("%q is not an id", a)
		}
	}
	return nil
}

// isVariadic reports whether the argument name takes more than one value
// ("ID...", "[ID...]").
func isVariadic(arg string) bool { return strings.HasSuffix(strings.TrimSuffix(arg, "]"), "...") }

func argsSaid(args []string) string {
	if len(args) == 0 {
		return "flags only"
	}
	return strings.Join(args, " ") + " and flags"
}

// buildBody returns --file's object with the fields of the body flags
// given set over it.
func (v *verb) buildBody(set map[string]any) (map[string]any, error) {
	body := map[string]any{}
	if file := set["file"]; file != nil {
		var err error
		if body, err = readBody(file.(string), os.Stdin); err != nil {
			return nil, err
		}
	}
	for _, spec := range v.flags {
		if val, ok := set[spec.name]; ok && spec.field != "" {
			setPath(body, spec.field, val)
		}
	}
	return body, nil
}

// apiClient returns the client of the API cf names (see
// clientFlags.newClient), acting in --account, with --timeout for each
// request, its answers kept by c.answer.
func (cf *clientFlags) apiClient(c *call, res *resource) (*client.Client, error) {
	opts := []client.Option{client.WithTimeout(c.timeout), client.WithHTTPClient(&http.Client{Transport: c.answer})}
	if a := c.str("account"); a != "" && res.account {
		opts = append(opts, client.WithAccount(a))
	}
	return cf.newClient(opts...)
}

// answerKeeper is an http.RoundTripper that keeps a copy of the body of the
// last 2xx answer as the client reads it (the client bounds that read:
// client.MaxResponseBytes).
type answerKeeper struct {
	next http.RoundTripper
	body bytes.Buffer
}

func (k *answerKeeper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := k.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	k.body.Reset()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &k.body), resp.Body}
	return resp, nil
}
