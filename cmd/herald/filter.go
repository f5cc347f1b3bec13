package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

const filterUsage = `Usage: herald filter test [flags] SUBSCRIPTION

Says whether an event would go to a subscription of a running Herald, and if
not which rule refused it: its event type, its subject, or which advanced
filter and why. The event is one CloudEvent as JSON (as it would be
published), read from --event (a file, or - for standard input). Nothing is
published. The exit status is 0 when the event matches, 1 when it does not,
2 for a usage error. The API key is HERALD_API_KEY, else the admin key in
DATA/admin.key (--data).

Flags:
`

// maxFilterEvent bounds the event read (the API's publish limit).
const maxFilterEvent = 1 << 20

func runFilter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		args = []string{"test", "-h"} // herald help filter
	}
	if len(args) == 0 || args[0] != "test" {
		fmt.Fprint(stderr, "herald filter: the command is herald filter test [flags] SUBSCRIPTION\n")
		return 2
	}
	fs, api, data, file := newFilterFlags(stderr)
	sub, code, ok := parseClientArgs(fs, args[1:], stderr)
	if !ok {
		return code
	}
	err := checkClientFlags(*api, *data)
	if err == nil && *file == "" {
		err = errors.New("--event must name a file, or - for standard input")
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald filter test: %v\n", err)
		return 2
	}
	var in io.Reader = os.Stdin
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintf(stderr, "herald filter test: --event: %v\n", err)
			return 2
		}
		defer f.Close()
		in = f
	}
	ev, err := io.ReadAll(io.LimitReader(in, maxFilterEvent+1))
	if err != nil || len(ev) > maxFilterEvent {
		fmt.Fprintf(stderr, "herald filter test: --event: unreadable or over 1 MiB\n")
		return 2
	}
	key, err := clientKey(*data)
	if err != nil {
		fmt.Fprintf(stderr, "herald filter test: %v\n", err)
		return 1
	}
	c := &apiClient{base: *api, key: key, hc: &http.Client{}}
	var res struct {
		Matches      bool   `json:"matches"`
		Reason       string `json:"reason"`
		FailedFilter *int   `json:"failed_filter"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/subscriptions/"+sub+"/filter-test", json.RawMessage(ev), &res, 30*time.Second); err != nil {
		fmt.Fprintf(stderr, "herald filter test: %v\n", err)
		return 1
	}
	if res.Matches {
		fmt.Fprintf(stdout, "matches: the event would go to %s\n", sub)
		return 0
	}
	which := ""
	if res.FailedFilter != nil {
		which = fmt.Sprintf(" (advanced_filters[%d])", *res.FailedFilter)
	}
	fmt.Fprintf(stdout, "does not match%s: %s\n", which, res.Reason)
	return 1
}

// newFilterFlags returns herald filter test's flag set and its values.
func newFilterFlags(stderr io.Writer) (fs *flag.FlagSet, api, data, file *string) {
	fs = flag.NewFlagSet("herald filter test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	api = fs.String("api", "http://127.0.0.1:8080", "the Herald API's base URL")
	data = fs.String("data", "./herald-data", "the server's data directory, for its admin.key when HERALD_API_KEY is not set")
	file = fs.String("event", "-", "the event: a file holding one CloudEvent as JSON, or - for standard input")
	fs.Usage = func() {
		fmt.Fprint(stderr, filterUsage)
		fs.PrintDefaults()
	}
	return fs, api, data, file
}
