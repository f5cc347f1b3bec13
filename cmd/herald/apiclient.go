package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
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
