package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/server"
)

// defaultAPI is the API a client command calls without --api or
// HERALD_API: herald serve's at its default --addr.
const defaultAPI = "http://127.0.0.1:8080"

// clientHelp is the paragraph of every client command's usage that says
// where its API and its key come from (clientFlags decides both).
const clientHelp = `It calls the Herald API at --api, else HERALD_API, else ` + defaultAPI + `.
The API key is HERALD_API_KEY, else the admin key the server wrote to
DATA/admin.key (--data, else HERALD_DATA, as herald serve reads it).
`

// clientFlags are the flags every client command takes, and the one place
// that decides which API it calls and with which key: the API is --api,
// else HERALD_API, else defaultAPI; the key is HERALD_API_KEY, else the
// admin key in <--data>/admin.key. The key is never a flag: a command
// line is visible to every user of the machine.
type clientFlags struct {
	api, data string
}

// addClientFlags defines --api and --data on fs.
func addClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{}
	fs.StringVar(&c.api, "api", defaultAPI, "the Herald API's base URL; without it HERALD_API, else the default")
	fs.StringVar(&c.data, "data", server.DefaultConfig().DataDir, "the server's data directory, for its admin.key when HERALD_API_KEY is not set")
	return c
}

// parse parses the arguments of a client command that names one
// subscription, given before the flags or after them (see parseArgs),
// takes --api from HERALD_API and --data from HERALD_DATA when they are
// not given (serve reads HERALD_DATA too), and checks the
// subscription id, --api and --data. When ok is false the command exits
// with code (0 for -h, 2 for a usage error, said on stderr).
func (c *clientFlags) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (sub string, code int, ok bool) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return "", code, false
	}
	rest := fs.Args()
	if sub == "" && len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	fromEnv, err := applyEnv(fs, os.LookupEnv, "api", "data")
	switch {
	case err != nil:
	case len(rest) > 0:
		err = fmt.Errorf("unexpected argument %q (one SUBSCRIPTION, then flags)", rest[0])
	case sub == "":
		err = fmt.Errorf("name the subscription: %s [flags] SUBSCRIPTION", fs.Name())
	case strings.ContainsAny(sub, "/?#%") || len(sub) > 100:
		err = fmt.Errorf("%q is not a subscription id", sub)
	default:
		err = c.check()
	}
	if err != nil {
		return "", usageError(stderr, fs.Name(), err, fromEnv), false
	}
	return sub, 0, true
}

// check checks --api and --data.
func (c *clientFlags) check() error {
	if u, err := url.Parse(c.api); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--api %q: want an http:// or https:// URL", redact.URL(c.api))
	}
	if c.data == "" {
		return errors.New("--data must name the server's data directory")
	}
	return nil
}

// newClient returns the client of the API the flags name, with its key:
// HERALD_API_KEY, else the admin key the server wrote to <--data>/admin.key
// at its first start, and opts. Without a key it says what to do.
func (c *clientFlags) newClient(opts ...client.Option) (*client.Client, error) {
	key := strings.TrimSpace(os.Getenv("HERALD_API_KEY"))
	if key == "" {
		path := filepath.Join(c.data, server.AdminKeyFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no API key: set HERALD_API_KEY, or point --data at the server's data directory (%s: %v)", path, errors.Unwrap(err))
		}
		key = strings.TrimSpace(string(b))
	}
	return client.New(c.api, append([]client.Option{client.WithKey(key), client.WithUserAgent("herald-cli")}, opts...)...)
}
