// Command herald is Herald's single binary: the server, the policy
// inspector, a local webhook receiver and the benchmark.
//
//	herald serve      run the server (embedded SQLite store by default)
//	herald policy     print a retry preset's timetable
//	herald sink       a local receiver that prints what arrives
//	herald migrate    apply the PostgreSQL schema migrations
//	herald bench      end-to-end benchmarks
//	herald version    print the version
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `Herald — durable event subscriptions and webhook delivery.

Usage:
  herald serve [flags]            run the server (herald serve -h lists flags)
  herald policy show NAME [--json] print a retry preset's timetable
  herald policy list              list the retry presets
  herald sink [flags]             run a local webhook receiver that prints what arrives
  herald migrate --store URL      apply the PostgreSQL schema migrations and exit
  herald bench [flags]            run end-to-end benchmarks against the real binary
  herald version                  print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "policy":
		return runPolicy(args[1:], stdout, stderr)
	case "sink":
		return runSink(args[1:], stdout, stderr)
	case "migrate":
		return runMigrate(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "herald", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "herald: unknown command %q\n\n%s", args[0], usage)
	return 2
}
