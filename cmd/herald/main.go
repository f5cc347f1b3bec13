// Command herald is Herald's binary: the server, the policy inspector, a
// local webhook receiver, the API's command line, and the launcher of the
// benchmark (its own binary, herald-bench: cmd/herald-bench).
//
//	herald serve      run the server (embedded SQLite store by default)
//	herald sink       a local receiver that prints what arrives
//	herald pull       receive, print and acknowledge a subscription's queued events
//	herald filter     say whether an event would go to a subscription, and why not
//	herald policy     print a retry preset's timetable
//	herald migrate    apply the PostgreSQL schema migrations
//	herald bench      end-to-end benchmarks (runs herald-bench: bench.go)
//	herald version    print the version and what it was built from
//	herald RESOURCE VERB   call the API: subscriptions, events, deliveries,
//	                  dead-letters, endpoints, accounts, event-types, sources, keys
//	                  and jobs,
//	                  each with its verbs (resources.go)
//	herald completion print a bash, zsh or fish completion script
//
// Every command refuses a bad flag value or a stray argument with exit
// status 2 before it starts anything.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

var usage = `Herald — durable event subscriptions and webhook delivery.

Usage:
  herald serve [--addr HOST:PORT] [--data DIR] [--store sqlite|postgres://URL] [flags]
      run the server; every flag is also an environment variable HERALD_<FLAG>
      (herald serve -h lists all of them). The API takes API keys
      (Authorization: Bearer): HERALD_ADMIN_KEY, set in the environment, is
      an admin key; without it, the first start on a store with no key
      writes one to DIR/admin.key. --auth=off takes requests without a key,
      for local experiments only
  herald sink [--addr HOST:PORT] [--status CODE] [--fail-first N] [--delay D] [--quiet]
              [--secret whsec_… | --public-key whpk_…]
      run a local webhook receiver that prints what arrives and whether its
      signature is valid
  herald pull [--api URL] [--data DIR] [--max-events N] [--max-wait D] [--count N] [--no-ack] SUBSCRIPTION
      receive a pull (or deactivated push) subscription's queued events from a
      running Herald, print and acknowledge them. It calls the API at --api,
      else HERALD_API, else ` + defaultAPI + `, with the key in
      HERALD_API_KEY, else the admin key in DIR/admin.key (--data)
  herald filter test [--api URL] [--data DIR] [--event FILE|-] SUBSCRIPTION
      say whether an event would go to a subscription of a running Herald,
      and which rule (event type, subject, advanced filter) refused it; the
      API and the key as for herald pull
  herald policy list
      list the retry presets
  herald policy show NAME [--json] [--spec JSON]
      print a retry preset's timetable; --spec applies retry_policy overrides
  herald migrate --store postgres://URL [--timeout D]
      apply the PostgreSQL schema migrations and exit
  herald bench [--scenario NAME|all] [--json] [--store sqlite|postgres://URL] [flags]
      run end-to-end benchmarks against the real binary (herald bench -h); they are
      the command herald-bench, beside herald, on PATH or built from the source tree
  herald version [--json]
      print the version and the source it was built from
  herald RESOURCE VERB [flags] [ARGS]
      call a running Herald's API (the API and the key as for herald pull),
      printing a table or, with -o json, the API's JSON:
` + resourcesUsage() + `      herald RESOURCE -h lists its verbs, herald RESOURCE VERB -h a verb's flags
  herald completion bash|zsh|fish
      print a shell completion script (herald completion -h says how to load it)
  herald help [COMMAND [VERB]]
      print this, or COMMAND's flags (as herald COMMAND -h does), to stdout
`

// commands are herald's commands by name; each returns the exit status.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"serve":   runServe,
	"sink":    runSink,
	"pull":    runPull,
	"filter":  runFilter,
	"policy":  runPolicy,
	"migrate": runMigrate,
	"bench":   benchMain,
	"version": runVersion,
}

// init adds the resources' commands and herald completion to commands
// (they read commands, so they cannot be in its literal).
func init() {
	for _, res := range resources {
		commands[res.name] = res.runResource
	}
	commands["completion"] = runCompletion
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command args name until it is done or ctx ends (SIGINT or
// SIGTERM), and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, rest := args[0], args[1:]
	if name == "--version" || name == "-v" {
		name = "version"
	}
	if name == "help" || isHelpFlag(name) {
		switch {
		case len(rest) == 0:
			fmt.Fprint(stdout, usage)
			return 0
		case len(rest) == 1 && commands[rest[0]] != nil:
			return commands[rest[0]](ctx, []string{"-h"}, stdout, stderr)
		case len(rest) == 2 && findResource(rest[0]) != nil && findResource(rest[0]).verb(rest[1]) != nil:
			return commands[rest[0]](ctx, []string{rest[1], "-h"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "herald help: want a command name (and a resource's verb), not %q\n\n%s", rest, usage)
		return 2
	}
	if cmd := commands[name]; cmd != nil {
		return cmd(ctx, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "herald: unknown command %q\n\n%s", name, usage)
	return 2
}
