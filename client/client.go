package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout is how long one request may take, sending the request
// through reading the whole answer, unless WithTimeout says otherwise.
const DefaultTimeout = 30 * time.Second

// MaxResponseBytes bounds the body of a successful answer the client reads
// (64 MiB). A list page is at most 4 MiB plus its last item and a receive
// answer 4 MiB, or one event alone (docs/api.md), so an answer of the API stays
// well below it; a longer one is an error, not a truncated value.
const MaxResponseBytes = 64 << 20

// maxProblemBytes bounds the body of an error answer the client reads
// (64 KiB): a problem document is small; the rest is left unread.
const maxProblemBytes = 64 << 10

// Client calls the Herald API's /v1 operations. Make one with New; it is
// safe for concurrent use. Each resource has a service field whose methods
// take a context first and send one request each: the client never
// retries on its own (a *Problem with RetryAfter says when to).
type Client struct {
	Accounts       *AccountsService
	Keys           *KeysService
	Subscriptions  *SubscriptionsService
	Jobs           *JobsService
	PortalSessions *PortalSessionsService
	Events         *EventsService
	Deliveries     *DeliveriesService
	DeadLetters    *DeadLettersService
	Endpoints      *EndpointsService
	Stats          *StatsService
	EventTypes     *EventTypesService
	Sources        *SourcesService
	Validation     *ValidationService

	base      *url.URL
	key       string
	account   string
	userAgent string
	timeout   time.Duration
	hc        *http.Client
	// maxResponse is MaxResponseBytes (tests make it small).
	maxResponse int64
}

// Option sets up a Client in New.
type Option func(*Client) error

// WithKey sends key as "Authorization: Bearer <key>" on every request but
// GET /v1/validation/{id}, which is public. Without it requests carry no
// key (enough for a server started with --auth=off).
func WithKey(key string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(key, " \t\r\n") {
			return errors.New("client: WithKey: the key has white space in it")
		}
		c.key = key
		return nil
	}
}

// WithAccount sends account_id=id on every operation that takes it (all
// but /v1/accounts and /v1/validation): an admin key then acts in that
// account instead of acc_default. Empty means the key's own account.
func WithAccount(id string) Option {
	return func(c *Client) error {
		c.account = id
		return nil
	}
}

// WithHTTPClient sends the requests with hc (for its transport: TLS
// settings, proxies). Its own Timeout, if any, applies besides the
// client's per-request timeout. Default: a client of http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("client: WithHTTPClient: nil *http.Client")
		}
		c.hc = hc
		return nil
	}
}

// WithTimeout bounds each request, from sending it to reading its whole
// answer, to d (DefaultTimeout, 30s, without it); the context's own
// deadline applies too, whichever is sooner. A receive waits up to its
// max_wait on top of d. d must be positive.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("client: WithTimeout: %v is not a positive duration", d)
		}
		c.timeout = d
		return nil
	}
}

// WithUserAgent sends ua as the User-Agent header (default
// "herald-go-client").
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(ua, "\r\n") {
			return errors.New("client: WithUserAgent: the user agent has a line break in it")
		}
		c.userAgent = ua
		return nil
	}
}

// New returns a Client for the API at baseURL, an http or https URL with a
// host and no query ("http://127.0.0.1:8080"; a path prefix is kept). The
// error names what is wrong with baseURL or an option.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	switch {
	case !strings.Contains(baseURL, "://"):
		return nil, fmt.Errorf("client: base URL %q: the scheme must be http or https (as in http://127.0.0.1:8080)", baseURL)
	case err != nil:
		return nil, fmt.Errorf("client: base URL %q: %v", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("client: base URL %q: the scheme must be http or https", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("client: base URL %q: no host", baseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("client: base URL %q: a query or fragment is not allowed", baseURL)
	case u.User != nil:
		return nil, fmt.Errorf("client: base URL %q: user information is not allowed (use WithKey)", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{base: u, timeout: DefaultTimeout, userAgent: "herald-go-client", hc: &http.Client{}, maxResponse: MaxResponseBytes}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	c.Accounts = &AccountsService{c}
	c.Keys = &KeysService{c}
	c.Subscriptions = &SubscriptionsService{c}
	c.Jobs = &JobsService{c}
	c.PortalSessions = &PortalSessionsService{c}
	c.Events = &EventsService{c}
	c.Deliveries = &DeliveriesService{c}
	c.DeadLetters = &DeadLettersService{c}
	c.Endpoints = &EndpointsService{c}
	c.Stats = &StatsService{c}
	c.EventTypes = &EventTypesService{c}
	c.Sources = &SourcesService{c}
	c.Validation = &ValidationService{c}
	return c, nil
}

// call is one request: the operation op with its path ids, the query,
// the body (nil: none; a []byte with a content type in raw; else JSON)
// and where the answer's JSON goes (nil: not read).
type call struct {
	op      operation
	ids     []string
	query   url.Values
	body    any
	raw     *rawBody
	header  http.Header
	out     any
	timeout time.Duration // added to the client's timeout (a receive's max_wait)
}

// rawBody is a body sent as it is, with its content type.
type rawBody struct {
	contentType string
	data        []byte
}

// do sends cl and decodes its answer into cl.out; a non-2xx answer is a
// *Problem.
func (c *Client) do(ctx context.Context, cl call) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, cl)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readProblem(resp)
	}
	if cl.out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProblemBytes))
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResponse+1))
	if err != nil {
		return fmt.Errorf("client: %s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if int64(len(body)) > c.maxResponse {
		return fmt.Errorf("client: %s %s: the answer is longer than %d bytes", req.Method, req.URL.Path, c.maxResponse)
	}
	if err := json.Unmarshal(body, cl.out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the answer: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// newRequest builds cl's HTTP request.
func (c *Client) newRequest(ctx context.Context, cl call) (*http.Request, error) {
	path, err := cl.op.expand(cl.ids)
	if err != nil {
		return nil, err
	}
	u := *c.base
	u.Path += path
	q := cl.query
	if q == nil {
		q = url.Values{}
	}
	if cl.op.account && c.account != "" {
		q.Set("account_id", c.account)
	}
	u.RawQuery = q.Encode()
	var body io.Reader
	contentType := ""
	switch {
	case cl.raw != nil:
		body, contentType = bytes.NewReader(cl.raw.data), cl.raw.contentType
	case cl.body != nil:
		data, err := json.Marshal(cl.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encoding the body: %w", cl.op.method, path, err)
		}
		body, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, cl.op.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", cl.op.method, path, err)
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.key != "" && !cl.op.public {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req, nil
}

// doJSON sends cl and returns its answer decoded as a T; nil and the
// error when it fails.
func doJSON[T any](ctx context.Context, c *Client, cl call) (*T, error) {
	var out T
	cl.out = &out
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	return &out, nil
}
