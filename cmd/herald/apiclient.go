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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/redact"
)

// apiClient is how the commands that call a running Herald (herald pull)
// talk to its API: the base URL, an API key, and problem+json errors turned
// into Go errors.
type apiClient struct {
	base string
	key  string
	hc   *http.Client
}

// clientKey returns the API key a command sends: HERALD_API_KEY, else the
// admin key the server wrote to <dataDir>/admin.key at its first start.
// Without either it says what to do.
func clientKey(dataDir string) (string, error) {
	if k := strings.TrimSpace(os.Getenv("HERALD_API_KEY")); k != "" {
		return k, nil
	}
	path := filepath.Join(dataDir, "admin.key")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no API key: set HERALD_API_KEY, or point --data at the server's data directory (%s: %v)", path, errors.Unwrap(err))
	}
	return strings.TrimSpace(string(b)), nil
}

// problemError is an API error answer.
type problemError struct {
	Status int
	Title  string
	Detail string
	Field  string
}

func (p *problemError) Error() string {
	s := fmt.Sprintf("%d %s", p.Status, p.Title)
	if p.Field != "" {
		s += " (" + p.Field + ")"
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// do sends a JSON request (in nil: no body) and decodes a 2xx answer into
// out (when not nil). The request is bounded by timeout; a non-2xx answer
// is a *problemError.
func (c *apiClient) do(ctx context.Context, method, path string, in, out any, timeout time.Duration) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.base, "/")+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		p := &problemError{Status: resp.StatusCode}
		if json.Unmarshal(raw, p) != nil || p.Title == "" {
			p.Title = http.StatusText(resp.StatusCode)
		}
		return p
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// parseClientArgs parses the flags of a command that names one
// subscription, given before the flags or after them, and checks the
// subscription id. When ok is false the caller exits with code (0 for -h,
// 2 for a usage error, said on stderr).
func parseClientArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (sub string, code int, ok bool) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", 0, false
		}
		return "", 2, false // the flag package said why
	}
	rest := fs.Args()
	if sub == "" && len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	var err error
	switch {
	case len(rest) > 0:
		err = fmt.Errorf("unexpected argument %q (one SUBSCRIPTION, then flags)", rest[0])
	case sub == "":
		err = fmt.Errorf("name the subscription: %s [flags] SUBSCRIPTION", fs.Name())
	case strings.ContainsAny(sub, "/?#%") || len(sub) > 100:
		err = fmt.Errorf("%q is not a subscription id", sub)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return "", 2, false
	}
	return sub, 0, true
}

// checkClientFlags checks the --api and --data every API client command
// takes.
func checkClientFlags(api, data string) error {
	if u, err := url.Parse(api); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--api %q: want an http:// or https:// URL", redact.URL(api))
	}
	if data == "" {
		return errors.New("--data must name the server's data directory")
	}
	return nil
}
