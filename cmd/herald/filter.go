package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/herald-events/herald/client"
)

const filterUsage = `Usage: herald filter test [flags] SUBSCRIPTION

Says whether an event would go to a subscription of a running Herald, and if
not which rule refused it: its event type, its subject, or which advanced
filter and why. The event is one CloudEvent as JSON (as it would be
published), read from --event (a file, or - for standard input). Nothing is
published. The exit status is 0 when the event matches, 1 when it does not,
2 for a usage error.

` + clientHelp + `
Flags:
`

// maxFilterEvent bounds the event read (the API's publish limit).
const maxFilterEvent = 1 << 20

func runFilter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		args = []string{"test", "-h"} // herald help filter
	}
	if len(args) == 0 || args[0] != "test" {
		got := "nothing"
		if len(args) > 0 {
			got = fmt.Sprintf("%q", args[0])
		}
		fmt.Fprintf(stderr, "herald filter: want test, not %s: the command is herald filter test [flags] SUBSCRIPTION\n\n", got)
		fs, _, _ := newFilterFlags(stderr)
		fs.Usage()
		return 2
	}
	fs, cf, file := newFilterFlags(stderr)
	sub, code, ok := cf.parse(fs, args[1:], stdout, stderr)
	if !ok {
		return code
	}
	if *file == "" {
		fmt.Fprintf(stderr, "herald filter test: --event must name a file, or - for standard input\n")
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
	var event client.Event
	if err := json.Unmarshal(ev, &event); err != nil {
		fmt.Fprintf(stderr, "herald filter test: --event: not a JSON object: %v\n", err)
		return 2
	}
	c, err := cf.newClient()
	if err != nil {
		fmt.Fprintf(stderr, "herald filter test: %v\n", err)
		return 1
	}
	res, err := c.Subscriptions.FilterTest(ctx, sub, event)
	if err != nil {
		printAPIError(stderr, "herald filter test", err)
		return 1
	}
	if res.Matches {
		fmt.Fprintf(stdout, "matches: the event would go to %s\n", sub)
		printDelivered(stdout, res.Delivered)
		return 0
	}
	which := ""
	if res.FailedFilter != nil {
		which = fmt.Sprintf(" (advanced_filters[%d])", *res.FailedFilter)
	}
	fmt.Fprintf(stdout, "does not match%s: %s\n", which, res.Reason)
	return 1
}

// newFilterFlags returns herald filter test's flag set, its client flags
// and --event.
func newFilterFlags(stderr io.Writer) (fs *flag.FlagSet, cf *clientFlags, file *string) {
	fs = flag.NewFlagSet("herald filter test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf = addClientFlags(fs)
	file = fs.String("event", "-", "the event: a file holding one CloudEvent as JSON, or - for standard input")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), filterUsage)
		fs.PrintDefaults()
	}
	return fs, cf, file
}

// printDelivered prints what a push would carry after the subscription's
// transform: the body (its content type first), or that the transform
// skips the event, or its error.
func printDelivered(w io.Writer, d *client.DeliveredPreview) {
	switch {
	case d == nil:
	case d.Filtered:
		fmt.Fprintln(w, "filtered: the transform gives null; the delivery would end filtered, nothing sent")
	case d.TransformError != nil:
		fmt.Fprintf(w, "transform_error: %s (the delivery would be dead-lettered, TransformFailed)\n", *d.TransformError)
	case d.Body != nil:
		fmt.Fprintf(w, "delivered (%s):\n%s\n", d.ContentType, *d.Body)
	case d.BodyBase64 != nil:
		fmt.Fprintf(w, "delivered (%s), in base64:\n%s\n", d.ContentType, *d.BodyBase64)
	}
}
