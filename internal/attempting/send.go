package attempting

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
)

// MaxLoggedBody is how much of a response body the attempt log keeps.
const MaxLoggedBody = 4 << 10

// maxDrainedBody is how much of a response body is read (and discarded past
// MaxLoggedBody) so the connection can be reused; larger bodies close it.
const maxDrainedBody = 64 << 10

// DefaultTimeout is an attempt's deadline when the subscription sets none.
const DefaultTimeout = 30 * time.Second

// NewHTTPClient returns the client attempts are sent with: no redirects
// followed (a 3xx is the attempt's answer, and a failure), no proxy, bounded
// dial and TLS handshake times, and at most maxIdle idle connections kept
// for reuse (the server gives the scheduler's MaxInFlight: no more could be in use at once;
// 256 per host at most, enough for the per-endpoint concurrency), so that
// the descriptors pushes take are bounded (see server.ReservedDescriptors).
// Each attempt's overall deadline comes from its subscription's timeout.
// Every connection it makes is to an address the policy allows: host names
// are resolved with r (nil: net.DefaultResolver) and their addresses
// checked on every dial (see destination.Dialer).
func NewHTTPClient(policy destination.Policy, r destination.Resolver, maxIdle int) *http.Client {
	dialer := &destination.Dialer{
		Policy:   policy,
		Resolver: r,
		Dialer:   &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   min(maxIdle, 256),
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0, // the attempt's context deadline governs
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// result is what one HTTP attempt produced.
type result struct {
	status     int    // 0 without a response
	outcome    string // http_NNN, timeout, connection_refused, ...
	err        string // transport error text; "" when a response arrived
	body       []byte // first MaxLoggedBody bytes of the response; nil without a response
	retryAfter string // the response's Retry-After header; "" without one
	duration   time.Duration
	refused    *destination.Refusal // the refusal of a destination_blocked attempt
	published  bool                 // a publish to a broker (broker.go), not an HTTP exchange
	// ends is the dead-letter reason of an attempt that no retry could
	// make succeed and that says nothing of the endpoint's health (a
	// broker target the event's attributes make invalid); "" otherwise.
	ends string
}

// fail records an attempt that got no response: its outcome, and err's
// text with the password of any URL in it redacted (redact.Error),
// as the attempt log, the logs and the API show it, and the refusal of an
// attempt Herald refused to make. Every error of send leaves it through
// here.
func (r *result) fail(outcome string, err error) {
	r.outcome, r.err = outcome, redact.Error(err).Error()
	if ref, ok := destination.RefusalOf(err); ok && outcome == outcomeBlocked {
		r.refused = &ref
	}
}

// retryAfterAt is how long the response's Retry-After header asks the
// sender to wait at now: 0 without a header, or with one that cannot be
// read (see retry.ParseRetryAfter).
func (r *result) retryAfterAt(now time.Time) time.Duration {
	d, _ := retry.ParseRetryAfter(r.retryAfter, now)
	return d
}

// attemptTimeout is how long an attempt of sub may take: its subscription's
// timeout, or DefaultTimeout when it sets none.
func attemptTimeout(sub *catalog.Entry) time.Duration {
	if sub.Timeout <= 0 {
		return DefaultTimeout
	}
	return sub.Timeout
}

// send makes one attempt: POST the deliveries (one, or a batch of one
// subscription's) to the subscription's URL, encoded in its delivery
// schema (event.Encode: the body and its content type and schema headers),
// with Herald's headers — user-agent, webhook-id (the delivery id; a batch
// has an id of its own, as its events are deduplicated by source and id),
// webhook-timestamp, webhook-signature (see internal/signing) over the exact
// body sent, herald-delivery-attempt (the highest attempt number among the
// deliveries), herald-subscription — and the subscription's own headers,
// secret headers and dynamic headers, and span's traceparent when tracing
// is on. The request is made with ctx, whose deadline is the
// subscription's timeout (see attempt).
func (a *Attempter) send(ctx context.Context, sub *catalog.Entry, cs []store.Claimed, now time.Time, span tracing.AttemptSpan) result {
	begin := time.Now()
	var res result
	// A single delivery's items stay on the stack; a batch's are allocated.
	items := make([]event.Item, 0, 1)
	if len(cs) > 1 {
		items = make([]event.Item, 0, len(cs))
	}
	attempt := 0
	for _, c := range cs {
		items = append(items, event.Item{Payload: c.Payload, DeliveryID: c.ID, Attempt: c.Attempts + 1, PublishedAt: c.CreatedAt})
		attempt = max(attempt, c.Attempts+1)
	}
	if publishes(sub, cs) {
		return a.brokerConns.publish(ctx, &a.cfg, sub, cs, items)
	}
	target := event.Target{AccountID: sub.AccountID, SubscriptionName: sub.Name, Batch: sub.Batches()}
	rawURL, u := sub.URL, sub.PushURL
	var enc event.Encoded
	var err error
	if dl := cs[0].DeadLetter; cs[0].DeadLetterOf != "" {
		// A dead letter, alone, to the dead-letter URL, with the fields of
		// why it was dead-lettered.
		rawURL, u = sub.Delivery.DeadLetterURL, sub.DeadLetterURL
		var info event.DeadLetterInfo
		if dl != nil {
			info = event.DeadLetterInfo{Reason: dl.DeadLetterReason, Attempts: dl.Attempts, LastOutcome: dl.LastOutcome,
				LastStatusCode: dl.LastStatusCode, LastAttemptAt: dl.LastAttemptAt}
		}
		enc, err = event.EncodeDeadLetter(sub.Schema(), target, items[0], info)
	} else {
		enc, err = event.Encode(sub.Schema(), target, items)
	}
	if err == nil && rawURL == "" {
		err = errors.New("the subscription has no dead-letter URL any more")
	}
	if err != nil {
		res.fail(outcomeRequestError, err)
		return res
	}
	req, err := newRequest(ctx, rawURL, u, enc.Body)
	if err != nil {
		res.fail(outcomeRequestError, err) // net/url's error quotes the URL
		return res
	}
	req.Header = a.header(sub, cs, enc, attempt, now)
	if span.Traceparent != "" {
		setTraceHeaders(req.Header, span)
	}

	resp, err := a.roundTripAuth(sub, req)
	if err != nil {
		res.duration = time.Since(begin)
		res.fail(classifyError(err), err)
		return res
	}
	res.body = readBody(resp.Body)
	res.duration = time.Since(begin)
	res.status = resp.StatusCode
	res.outcome = httpOutcome(resp.StatusCode)
	res.retryAfter = resp.Header.Get("Retry-After")
	return res
}

// newRequest returns the POST of body to u, the catalog's parse of rawURL
// (nil: rawURL did not parse, and its error is returned), with the
// context ctx: http.NewRequestWithContext's request without a parse of
// the URL per attempt. The body is a bytes.Reader, which net/http writes
// with the headers in one write (a reader it does not know is in memory
// gets the headers flushed first: two), and can be rewound (GetBody), so
// that net/http retries a request it could not write on a reused
// connection the receiver had closed.
func newRequest(ctx context.Context, rawURL string, u *url.URL, body []byte) (*http.Request, error) {
	if u == nil {
		return http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	}
	r := http.Request{
		Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: http.NoBody, ContentLength: int64(len(body)), Host: u.Host,
	}
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return r.WithContext(ctx), nil
}

// header builds an attempt's request header (attempt: the highest attempt
// number among the deliveries). The headers are set in this
// order, each replacing what an earlier one set under the same canonical
// name (http.Header.Set): the subscription's headers, its secret headers,
// its dynamic headers (setDynamicHeaders), the schema's, then Herald's own.
// A dead letter gets none of the subscription's.
func (a *Attempter) header(sub *catalog.Entry, cs []store.Claimed, enc event.Encoded, attempt int, now time.Time) http.Header {
	deadLetter := cs[0].DeadLetterOf != ""
	n := len(enc.Header) + heraldHeaders
	if !deadLetter {
		n += len(sub.Headers) + len(sub.SecretHeaders) + len(sub.DynamicHeaders)
	}
	h := newHeaderBuilder(n)
	if !deadLetter {
		// The subscription's own headers are its endpoint's (credentials,
		// often): a dead-letter URL, maybe another host's, gets none.
		for k, v := range sub.Headers {
			h.set(k, v)
		}
		for k, v := range sub.SecretHeaders {
			h.set(k, v)
		}
		a.setDynamicHeaders(&h, sub, cs)
	}
	for _, kv := range enc.Header {
		h.set(kv[0], kv[1])
	}
	id := cs[0].ID
	if len(cs) > 1 {
		id = ids.New("bat_", now)
	}
	ts := now.Unix()
	if enc.ContentType != "" {
		h.setCanonical("Content-Type", enc.ContentType)
	}
	h.setCanonical("User-Agent", a.cfg.UserAgent)
	h.setCanonical("Webhook-Id", id)
	h.setCanonical("Webhook-Timestamp", a.stamps.format(ts))
	if sig := sub.Signer.Sign(id, ts, enc.Body, now); sig != "" {
		h.setCanonical("Webhook-Signature", sig)
	}
	h.setCanonical("Herald-Delivery-Attempt", strconv.Itoa(attempt))
	h.setCanonical("Herald-Subscription", sub.ID)
	return h.header
}

// httpOutcomes are the outcomes of the status codes 100 to 599, made once:
// an attempt's outcome is one of them, not a string of its own.
var httpOutcomes = func() (o [600]string) {
	for code := 100; code < len(o); code++ {
		o[code] = "http_" + strconv.Itoa(code)
	}
	return o
}()

// httpOutcome is the outcome of an answer with this status code: http_NNN.
func httpOutcome(code int) string {
	if code >= 100 && code < len(httpOutcomes) {
		return httpOutcomes[code]
	}
	return "http_" + strconv.Itoa(code)
}

// unixStamps formats Unix times in seconds, keeping the last one made:
// the attempts of one second share their Webhook-Timestamp's string.
type unixStamps struct {
	last atomic.Pointer[unixStamp]
}

type unixStamp struct {
	unix int64
	text string
}

// format returns unix in decimal.
func (u *unixStamps) format(unix int64) string {
	if l := u.last.Load(); l != nil && l.unix == unix {
		return l.text
	}
	l := &unixStamp{unix: unix, text: strconv.FormatInt(unix, 10)}
	u.last.Store(l)
	return l.text
}

// heraldHeaders is how many headers send sets besides the subscription's
// and the schema's: Content-Type, User-Agent, Webhook-Id,
// Webhook-Timestamp, Webhook-Signature, Herald-Delivery-Attempt and
// Herald-Subscription.
const heraldHeaders = 7

// headerBuilder builds a request's header with two allocations (besides
// the names it canonicalises): the map, sized for every header, and one
// array holding every value. Each header's value is a one-element slice
// of that array whose capacity is capped, so that an Add to a header
// copies its values rather than overwriting its neighbour's. Setting more
// headers than it was sized for is correct, at the cost of allocations.
type headerBuilder struct {
	header http.Header
	values []string
}

// newHeaderBuilder returns a builder sized for n headers.
func newHeaderBuilder(n int) headerBuilder {
	return headerBuilder{header: make(http.Header, n), values: make([]string, 0, n)}
}

// set is http.Header.Set: name is canonicalised
// (textproto.CanonicalMIMEHeaderKey) and value replaces whatever was set
// under it.
func (b *headerBuilder) set(name, value string) {
	b.setCanonical(textproto.CanonicalMIMEHeaderKey(name), value)
}

// setCanonical is set for a name already in canonical form, which it
// does not check.
func (b *headerBuilder) setCanonical(name, value string) {
	i := len(b.values)
	b.values = append(b.values, value)
	b.header[name] = b.values[i : i+1 : i+1]
}

// bodyBuffers holds the buffers readBody reads responses with.
var bodyBuffers = sync.Pool{New: func() any { return new([MaxLoggedBody]byte) }}

// readBody reads a response body and closes it. It returns a copy of the
// body's first MaxLoggedBody bytes, empty but not nil when there are none,
// and discards up to maxDrainedBody more so that the connection can be
// reused; a longer body is not read to its end, and closing it closes the
// connection. A read error ends the reading: what was read before it is
// kept.
func readBody(body io.ReadCloser) []byte {
	buf := bodyBuffers.Get().(*[MaxLoggedBody]byte)
	defer bodyBuffers.Put(buf)
	n, err := io.ReadFull(body, buf[:])
	logged := make([]byte, n)
	copy(logged, buf[:n])
	if err == nil { // the buffer is full: there may be more
		discard(body, buf[:], maxDrainedBody)
	}
	body.Close()
	return logged
}

// discard reads and drops up to limit bytes of r, through buf, until r
// ends or fails.
func discard(r io.Reader, buf []byte, limit int) {
	for limit > 0 {
		n, err := r.Read(buf[:min(len(buf), limit)])
		limit -= n
		if err != nil {
			return
		}
	}
}

// roundTrip sends req with c's transport directly: an attempt
// follows no redirect (a 3xx is its answer) and has no cookie jar, so
// http.Client.Do would only add its redirect bookkeeping (a copy of the
// headers per request, about 2 % of a delivery's CPU). As Do does, a URL's
// user information becomes basic authentication unless an Authorization
// header is set. A client with a jar or a Timeout of its own (a test's)
// goes through Do.
func (a *Attempter) roundTrip(req *http.Request, c *http.Client) (*http.Response, error) {
	if c.Jar != nil || c.Timeout != 0 {
		return c.Do(req)
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		req.SetBasicAuth(u.Username(), password)
	}
	tr := c.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		// As Client.Do reports it: the operation and URL (its password
		// redacted), then the cause.
		return nil, &url.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

// outcomeRequestError is the outcome of an attempt Herald could not make:
// the request could not be built or was refused by the HTTP client before
// anything was sent (a header value it cannot send, for example).
const outcomeRequestError = "request_error"

// outcomeBlocked is the outcome of an attempt Herald refused to make: the
// URL's host resolved to no address the destination policy allows
// (destination.Policy). Nothing was sent; it is not retried.
const outcomeBlocked = "destination_blocked"

// outcomeLocalError is the outcome of an attempt that failed for want of a
// resource of Herald's own host: a socket it could not open, when dialling
// or in the DNS lookup before (EMFILE or ENFILE: too many open files).
// Nothing reached the endpoint, so it says nothing of the endpoint's
// health (healthOf), nor of the delivery: it is retried after
// localRetryDelay without counting against its retry budget (see
// attempt).
const outcomeLocalError = "local_error"

// classifyError names a transport failure: auth_failed (see authError),
// request_error or
// destination_blocked (nothing was sent), local_error (Herald's host ran
// out of file descriptors), timeout, connection_refused, connection_reset,
// dns_error, tls_error, or network_error for the rest.
func classifyError(err error) string {
	// net/http checks header names and values before it dials.
	if msg := err.Error(); strings.Contains(msg, "net/http: invalid header ") {
		return outcomeRequestError
	}
	if _, ok := errors.AsType[*authError](err); ok {
		return outcomeAuthFailed
	}
	if destination.IsBlocked(err) {
		return outcomeBlocked
	}
	if isLocalResourceError(err) {
		return outcomeLocalError
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &dnsErr):
		return "dns_error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection_reset"
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert),
		errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid), isRemoteTLSAlert(err):
		return "tls_error"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	return "network_error"
}

// isRemoteTLSAlert reports whether err is an alert the peer sent in the
// TLS handshake (crypto/tls reports it as a *net.OpError "remote error"):
// a receiver that wants a client certificate and got none or one it does
// not trust, for one.
func isRemoteTLSAlert(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "remote error"
}

// isLocalResourceError reports whether err says Herald's host could not
// open a file descriptor: EMFILE (the process's limit) or ENFILE (the
// system's), wrapped in the dial's error, or only as text in a DNS
// lookup's (net.DNSError keeps no cause but a context's).
func isLocalResourceError(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) &&
		(strings.HasSuffix(dnsErr.Err, syscall.EMFILE.Error()) || strings.HasSuffix(dnsErr.Err, syscall.ENFILE.Error()))
}
