package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// requestTimeout bounds every API request the bench makes.
const requestTimeout = 30 * time.Second

// client talks to the server's API.
type client struct {
	base string
	key  string // sent as Authorization: Bearer
	hc   *http.Client
}

// benchAdminKey makes the admin key (HERALD_ADMIN_KEY) of one bench
// server.
func benchAdminKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "bench_" + hex.EncodeToString(b[:])
}

func newClient(base, key string, conns int) *client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &client{base: base, key: key, hc: &http.Client{Transport: tr, Timeout: requestTimeout}}
}

// auth is the Authorization header's value.
func (c *client) auth() []string { return []string{"Bearer " + c.key} }

func (c *client) close() { c.hc.CloseIdleConnections() }

// do sends a request and returns the status and body (up to 16 MiB).
func (c *client) do(ctx context.Context, method, path, ctype string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	// Built once per request: the header's value is the same string.
	req.Header["Authorization"] = c.auth()
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, b, err
}

// subscription is what the bench creates.
type subscription struct {
	Name         string          `json:"name"`
	URL          string          `json:"url,omitempty"`           // none for a pull subscription
	DeliveryMode string          `json:"delivery_mode,omitempty"` // "" (push) or "pull"
	EventTypes   []string        `json:"event_types,omitempty"`
	RetryPolicy  json.RawMessage `json:"retry_policy,omitempty"`
	Timeout      string          `json:"timeout,omitempty"`
	// Batching (cloudevents schema): 0 leaves the server's default.
	MaxEventsPerBatch int `json:"max_events_per_batch,omitempty"`
	PreferredBatchKB  int `json:"preferred_batch_size_kb,omitempty"`
	// AdvancedFilters (Event Grid's advanced filters), JSON; nil: none.
	AdvancedFilters json.RawMessage `json:"advanced_filters,omitempty"`
	// Ordering: "" (the server's default, none) or "key".
	Ordering string `json:"ordering,omitempty"`
	// Destination (JSON; nil: URL's webhook) is a broker destination
	// (docs/destinations.md).
	Destination json.RawMessage `json:"destination,omitempty"`
	// Transform is a CEL transform (nil: none).
	Transform *transformSpec `json:"transform,omitempty"`
}

// transformSpec is a subscription's transform.
type transformSpec struct {
	CEL string `json:"cel"`
}

// createSubscription creates s and returns its id.
func (c *client) createSubscription(ctx context.Context, s subscription) (string, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	code, resp, err := c.do(ctx, http.MethodPost, "/v1/subscriptions", "application/json", body)
	if err != nil {
		return "", fmt.Errorf("creating subscription %s: %w", s.Name, err)
	}
	if code != http.StatusCreated {
		return "", fmt.Errorf("creating subscription %s: %d %s", s.Name, code, bytes.TrimSpace(resp))
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp, &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("creating subscription %s: unexpected answer %s", s.Name, resp)
	}
	return out.ID, nil
}

// anyPending reports whether the server lists a pending delivery.
func (c *client) anyPending(ctx context.Context) (bool, error) {
	code, resp, err := c.do(ctx, http.MethodGet, "/v1/deliveries?status=pending&limit=1", "", nil)
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("listing pending deliveries: %d %s", code, bytes.TrimSpace(resp))
	}
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return false, fmt.Errorf("listing pending deliveries: %v", err)
	}
	return len(out.Data) > 0, nil
}

// pendingByLane reads herald_deliveries_pending{lane} from /metrics (the
// server caches it for a few seconds). ok is false when the metric is
// absent.
func (c *client) pendingByLane(ctx context.Context) (fresh, retry int64, ok bool, err error) {
	code, resp, err := c.do(ctx, http.MethodGet, "/metrics", "", nil)
	if err != nil {
		return 0, 0, false, err
	}
	if code != http.StatusOK {
		return 0, 0, false, fmt.Errorf("/metrics answered %d", code)
	}
	fresh, retry, ok = ParsePending(resp)
	return fresh, retry, ok, nil
}

// ParsePending finds herald_deliveries_pending{lane="fresh"} and
// {lane="retry"} in a Prometheus text exposition; ok is false unless both
// are there.
func ParsePending(text []byte) (fresh, retry int64, ok bool) {
	var seen int
	for _, line := range bytes.Split(text, []byte("\n")) {
		rest, found := bytes.CutPrefix(line, []byte(`herald_deliveries_pending{lane="`))
		if !found {
			continue
		}
		lane, val, found := bytes.Cut(rest, []byte(`"} `))
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(val)), 64)
		if err != nil {
			continue
		}
		switch string(lane) {
		case "fresh":
			fresh, seen = int64(v), seen|1
		case "retry":
			retry, seen = int64(v), seen|2
		}
	}
	return fresh, retry, seen == 3
}
