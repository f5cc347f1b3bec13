package attempting

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// newSendEngine returns an attempter that can make attempts (send,
// attempt) and nothing else: no store, no catalog, no recorder. Its client
// may connect to loopback receivers.
func newSendEngine(tb testing.TB) *Attempter {
	tb.Helper()
	e := New(Config{Destinations: destination.Policy{AllowPrivate: true}, Owner: "test"})
	tb.Cleanup(e.Abandon)
	return e
}

// newSendSub returns a subscription to url, signed with an HMAC key, with
// two custom headers and one secret header.
func newSendSub(tb testing.TB, url string) *catalog.Entry {
	tb.Helper()
	sub, err := catalog.NewEntry(subscription.Subscription{
		ID: "sub_1", Name: "s", URL: url, State: subscription.StateActive,
		Headers:       map[string]string{"X-Tenant": "acme", "x-region": "eu"},
		SecretHeaders: map[string]string{"Authorization": "Bearer t0k3n"},
		Signing:       signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: []byte(strings.Repeat("k", 32))}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sub
}

// newClaimed returns a held delivery of sub_1 whose stored event has data
// of about dataLen bytes.
func newClaimed(tb testing.TB, dataLen int) store.Claimed {
	tb.Helper()
	ev := event.Event{SpecVersion: "1.0", ID: "evt_1", Source: "/orders", Type: "order.created",
		Time: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC),
		Data: []byte(`{"note":"` + strings.Repeat("x", dataLen) + `"}`)}
	payload, err := ev.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	var c store.Claimed
	c.ID, c.SubscriptionID, c.Payload = "dlv_1", "sub_1", payload
	c.CreatedAt, c.RoundStart = ev.Time, time.Now()
	return c
}

// attemptOnce makes one attempt of cs as run does, without the scheduler
// and the recorder: registered in the running set. ok is false when it was
// cut short.
func attemptOnce(e *Attempter, sub *catalog.Entry, cs []store.Claimed) ([]store.Outcome, bool) {
	reg := e.running.add(sub.ID)
	defer e.running.remove(sub.ID, reg)
	got, ok := e.attempt(reg, sub, cs, false)
	return got.outs, ok
}

// BenchmarkSend makes attempts of one ~700-byte event, signed, with three
// custom headers: the attempt path's own cost (the request, its context and
// headers, reading the response, the verdict). loopback sends them to a
// receiver on 127.0.0.1 answering 200 "ok" (its allocations are counted
// too); stub to a transport that answers 200 "ok" without a connection.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	cs := []store.Claimed{newClaimed(b, 600)}
	for _, bc := range []struct {
		name   string
		client *http.Client
	}{
		{"loopback", nil},
		{"stub", &http.Client{Transport: stubTransport{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newSendEngine(b)
			if bc.client != nil {
				e.cfg.Client = bc.client
			}
			sub := newSendSub(b, srv.URL)
			b.ReportAllocs()
			for b.Loop() {
				outs, ok := attemptOnce(e, sub, cs)
				if !ok || outs[0].Attempt.Outcome != "http_200" {
					b.Fatalf("ok %v, outcome %+v", ok, outs)
				}
			}
		})
	}
}

// stubTransport reads each request's body and answers 200 "ok".
type stubTransport struct{}

func (stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

// reusedTransport is stubTransport allocating nothing: it answers every
// request with the same response, its body rewound. For one attempt at a
// time, so that an attempt's allocation count is Herald's own.
type reusedTransport struct {
	resp *http.Response
	body *strings.Reader
}

func newReusedTransport() *reusedTransport {
	t := &reusedTransport{body: strings.NewReader("ok")}
	t.resp = &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(t.body)}
	return t
}

func (t *reusedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	t.body.Reset("ok")
	return t.resp, nil
}

// receiver is a test endpoint: handle answers each request; conns counts
// the connections made to it.
type receiver struct {
	*httptest.Server
	conns atomic.Int64
}

func newReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewUnstartedServer(handle)
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// TestSendHeaders: the request carries the subscription's headers and
// secret headers under their canonical names, and Herald's own, each with
// one value; Herald's override the subscription's of the same name.
func TestSendHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() })
	e := newSendEngine(t)
	sub := newSendSub(t, rc.URL)
	sub.Headers["webhook-id"] = "mine" // the API refuses it; a stored one loses anyway
	sub.Headers["x-both"], sub.SecretHeaders["X-Both"] = "plain", "secret"
	cs := []store.Claimed{newClaimed(t, 10)}
	cs[0].Attempts = 2
	if outs, ok := attemptOnce(e, sub, cs); !ok || outs[0].Attempt.Outcome != "http_200" {
		t.Fatalf("ok %v, outcome %+v", ok, outs)
	}
	h := <-got
	want := map[string]string{
		"X-Tenant": "acme", "X-Region": "eu", "Authorization": "Bearer t0k3n", "X-Both": "secret",
		"Content-Type": "application/cloudevents+json", "User-Agent": "Herald",
		"Webhook-Id": "dlv_1", "Herald-Delivery-Attempt": "3", "Herald-Subscription": "sub_1",
	}
	for k, v := range want {
		if h[k] == nil || len(h[k]) != 1 || h[k][0] != v {
			t.Errorf("%s: %q, want [%q]", k, h[k], v)
		}
	}
	for _, k := range []string{"Webhook-Timestamp", "Webhook-Signature"} {
		if len(h[k]) != 1 || h[k][0] == "" {
			t.Errorf("%s: %q, want one value", k, h[k])
		}
	}
}

// TestHeaderBuilderIsHeaderSet: the builder gives the header
// http.Header.Set would, in the same order, and its values are
// independent: adding to one header changes no other.
func TestHeaderBuilderIsHeaderSet(t *testing.T) {
	sets := [][2]string{{"x-a", "1"}, {"X-B", "2"}, {"ce-id", "3"}, {"X-A", "4"}, {"content-type", "5"}}
	for _, n := range []int{0, 2, len(sets) + 1} { // sized too small, or large enough
		b := newHeaderBuilder(n)
		want := http.Header{}
		for _, kv := range sets {
			b.set(kv[0], kv[1])
			want.Set(kv[0], kv[1])
		}
		b.setCanonical("Webhook-Id", "6")
		want.Set("Webhook-Id", "6")
		if !reflect.DeepEqual(b.header, want) {
			t.Fatalf("sized %d: %v, want %v", n, b.header, want)
		}
		b.header.Add("X-B", "7")
		want.Add("X-B", "7")
		if !reflect.DeepEqual(b.header, want) {
			t.Fatalf("sized %d: after an Add %v, want %v", n, b.header, want)
		}
	}
}

// TestSendResponseBody: the attempt log keeps the response body's first
// MaxLoggedBody bytes (empty, not nil, for an empty body: the store logs
// an empty body, not a missing one), and the connection is reused when the
// body ends within MaxLoggedBody + maxDrainedBody bytes, closed when it is
// longer.
func TestSendResponseBody(t *testing.T) {
	body := make([]byte, MaxLoggedBody+maxDrainedBody+1)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var size atomic.Int64
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		n := size.Load()
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		_, _ = w.Write(body[:n])
	})
	e := newSendEngine(t)
	sub := newSendSub(t, rc.URL)
	cs := []store.Claimed{newClaimed(t, 10)}
	if _, ok := attemptOnce(e, sub, cs); !ok { // connects
		t.Fatal("cut short")
	}
	for _, tc := range []struct {
		size  int
		reuse bool // the next attempt reuses the connection
	}{
		{0, true},
		{2, true},
		{MaxLoggedBody - 1, true},
		{MaxLoggedBody, true},
		{MaxLoggedBody + 1, true},
		{MaxLoggedBody + maxDrainedBody, true},
		{MaxLoggedBody + maxDrainedBody + 1, false},
	} {
		size.Store(int64(tc.size))
		conns := rc.conns.Load()
		outs, ok := attemptOnce(e, sub, cs)
		if !ok || outs[0].Attempt.Outcome != "http_200" {
			t.Fatalf("size %d: ok %v, outcome %+v", tc.size, ok, outs)
		}
		logged := outs[0].Attempt.ResponseBody
		if want := body[:min(tc.size, MaxLoggedBody)]; logged == nil || !bytes.Equal(logged, want) {
			t.Errorf("size %d: logged %d bytes (nil %v), want the first %d", tc.size, len(logged), logged == nil, len(want))
		}
		size.Store(0)
		if _, ok := attemptOnce(e, sub, cs); !ok {
			t.Fatal("cut short")
		}
		if reused := rc.conns.Load() == conns; reused != tc.reuse {
			t.Errorf("size %d: the next attempt reused the connection: %v, want %v", tc.size, reused, tc.reuse)
		}
	}
}

// TestSendRetryAfter: a 503's Retry-After holds the retry back.
func TestSendRetryAfter(t *testing.T) {
	var retryAfter atomic.Value
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if ra := retryAfter.Load().(string); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	e := newSendEngine(t)
	sub := newSendSub(t, rc.URL)
	cs := []store.Claimed{newClaimed(t, 10)}
	for _, ra := range []string{"", "3600"} {
		retryAfter.Store(ra)
		outs, ok := attemptOnce(e, sub, cs)
		if !ok || outs[0].Status != delivery.StatusPending {
			t.Fatalf("Retry-After %q: ok %v, outcome %+v", ra, ok, outs)
		}
		wait := outs[0].NextAttemptAt.Sub(outs[0].Attempt.StartedAt)
		if held := wait >= time.Hour-time.Minute; held != (ra != "") {
			t.Errorf("Retry-After %q: next attempt after %v", ra, wait)
		}
	}
}

// blockingReceiver answers no request until the request or the test ends;
// arrived receives each request as it arrives.
func blockingReceiver(t *testing.T) (*receiver, chan struct{}) {
	arrived := make(chan struct{}, 10)
	done := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	t.Cleanup(func() { close(done) }) // before the receiver closes
	return rc, arrived
}

// TestSendTimeout: an attempt that runs out of its subscription's time is
// a "timeout", recorded (not cut short).
func TestSendTimeout(t *testing.T) {
	rc, _ := blockingReceiver(t)
	e := newSendEngine(t)
	sub := newSendSub(t, rc.URL)
	sub.Timeout = 50 * time.Millisecond
	begin := time.Now()
	outs, ok := attemptOnce(e, sub, []store.Claimed{newClaimed(t, 10)})
	if !ok {
		t.Fatal("the attempt was cut short")
	}
	a := outs[0].Attempt
	if a.Outcome != "timeout" || a.StatusCode != 0 || !strings.Contains(a.Error, "context deadline exceeded") || a.ResponseBody != nil {
		t.Fatalf("attempt %+v, want a timeout", a)
	}
	if d := time.Since(begin); d < sub.Timeout {
		t.Fatalf("ended after %v, before the timeout", d)
	}
}

// TestSendCutShort: an attempt is cut short (nothing recorded) by
// StopSubscription or a hard stop, whether it comes during the request or
// before it (then nothing is sent).
func TestSendCutShort(t *testing.T) {
	rc, arrived := blockingReceiver(t)
	cs := []store.Claimed{newClaimed(t, 10)}
	cut := map[string]func(e *Attempter){
		"StopSubscription": func(e *Attempter) {
			if err := e.StopSubscription(context.Background(), "sub_1"); err != nil {
				t.Error(err)
			}
		},
		"hard stop": func(e *Attempter) { e.cancel() },
	}
	for name, cut := range cut {
		t.Run(name+" during the request", func(t *testing.T) {
			e := newSendEngine(t)
			sub := newSendSub(t, rc.URL)
			go func() { <-arrived; cut(e) }()
			if _, ok := attemptOnce(e, sub, cs); ok {
				t.Fatal("the attempt was not cut short")
			}
		})
		t.Run(name+" before the request", func(t *testing.T) {
			e := newSendEngine(t)
			sub := newSendSub(t, rc.URL)
			reg := e.running.add(sub.ID)
			if name == "hard stop" {
				cut(e)
			} else {
				e.running.cancelSub(sub.ID) // StopSubscription would wait for it
			}
			_, ok := e.attempt(reg, sub, cs, false)
			e.running.remove(sub.ID, reg)
			if ok {
				t.Fatal("the attempt was not cut short")
			}
			select {
			case <-arrived:
				t.Fatal("a request was sent")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// TestRunningAttemptCutAfterTimeout: an attempt cut short after its
// request timed out is still abandoned, as when it is cut short during the
// request.
func TestRunningAttemptCutAfterTimeout(t *testing.T) {
	e := newSendEngine(t)
	reg := e.running.add("sub_1")
	defer e.running.remove("sub_1", reg)
	ctx, cancel := context.WithTimeout(e.attemptsCtx, time.Nanosecond)
	defer cancel()
	reg.arm(cancel)
	<-ctx.Done()
	if e.abandoned(reg) {
		t.Fatal("abandoned before being cut short")
	}
	e.running.cancelSub("sub_1")
	if !e.abandoned(reg) {
		t.Fatal("not abandoned once cut short")
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestSendRedactsSecrets: the error an attempt logs never shows the URL's
// password nor a secret header's value, whichever way the attempt failed:
// refused by the transport (the engine's own round trip, and
// http.Client.Do's), refused by net/url before anything was sent, or by
// net/http's header checks.
func TestSendRedactsSecrets(t *testing.T) {
	const password, secret = "SuperSecretPw1", "s3cr3t-v4lue"
	addr := closedPort(t)
	for _, c := range []struct {
		name, url, outcome string
		edit               func(*Attempter, *catalog.Entry)
	}{
		{"transport", "http://usr:" + password + "@" + addr + "/hook", "connection_refused", nil},
		{"client", "http://usr:" + password + "@" + addr + "/hook", "connection_refused", func(e *Attempter, _ *catalog.Entry) {
			e.cfg.Client = &http.Client{Timeout: time.Minute, Transport: e.cfg.Client.Transport}
		}},
		{"parse", "http://usr:" + password + "@" + addr + ":x/hook", outcomeRequestError, nil},
		{"header", "http://usr:" + password + "@" + addr + "/hook", outcomeRequestError, func(_ *Attempter, sub *catalog.Entry) {
			sub.SecretHeaders["X-Key"] = secret + "\x01"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSendEngine(t)
			sub := newSendSub(t, c.url)
			if c.edit != nil {
				c.edit(e, sub)
			}
			outs, ok := attemptOnce(e, sub, []store.Claimed{newClaimed(t, 10)})
			if !ok {
				t.Fatal("cut short")
			}
			a := outs[0].Attempt
			if a.Outcome != c.outcome || a.Error == "" {
				t.Fatalf("attempt %+v, want outcome %s with an error", a, c.outcome)
			}
			if strings.Contains(a.Error, password) || strings.Contains(a.Error, secret) {
				t.Fatalf("the attempt's error shows a secret: %q", a.Error)
			}
			if strings.Contains(a.Error, "://") && !strings.Contains(a.Error, "usr:xxxxx@") {
				t.Fatalf("the attempt's error shows the URL without its password redacted: %q", a.Error)
			}
		})
	}
}

// TestClassifyLocalResourceErrors: a dial or DNS lookup that failed because
// Herald's host is out of file descriptors is local_error (not the
// endpoint's failure); the same errors for other causes keep their names.
func TestClassifyLocalResourceErrors(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://example.com/hook", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{dial(os.NewSyscallError("socket", syscall.EMFILE)), outcomeLocalError},
		{dial(os.NewSyscallError("socket", syscall.ENFILE)), outcomeLocalError},
		{dial(&net.DNSError{Err: "dial udp 127.0.0.53:53: socket: too many open files", Name: "example.com"}), outcomeLocalError},
		{dial(&net.DNSError{Err: "open /etc/hosts: too many open files in system", Name: "example.com"}), outcomeLocalError},
		{dial(&net.DNSError{Err: "no such host", Name: "example.com", IsNotFound: true}), "dns_error"},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection_refused"},
		{dial(os.NewSyscallError("connect", syscall.ENETUNREACH)), "network_error"},
	} {
		if got := classifyError(c.err); got != c.want {
			t.Errorf("%v: %s, want %s", c.err, got, c.want)
		}
	}
	if _, observed := healthOf(retry.Policy{}, result{outcome: outcomeLocalError}, time.Now()); observed {
		t.Error("a local_error attempt counts in the endpoint's health")
	}
}

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestARequestIsOneWrite: a push's headers and body leave in one write on
// the connection (net/http flushes the headers on their own first for a
// body it does not know is in memory: two writes and two segments a push).
func TestARequestIsOneWrite(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
	var writes atomic.Int64
	dialer := &net.Dialer{}
	e := newSendEngine(t)
	e.cfg.Client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		return countingConn{Conn: c, writes: &writes}, err
	}}}
	sub := newSendSub(t, rc.URL)
	cs := []store.Claimed{newClaimed(t, 600)}
	for i := range 3 {
		before := writes.Load()
		if outs, ok := attemptOnce(e, sub, cs); !ok || outs[0].Attempt.Outcome != "http_200" {
			t.Fatalf("attempt %d: %v %+v", i, ok, outs)
		}
		if n := writes.Load() - before; n != 1 {
			t.Fatalf("attempt %d took %d writes on the connection, want 1", i, n)
		}
	}
}
