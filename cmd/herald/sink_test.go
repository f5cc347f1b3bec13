package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type sinkBundle struct {
	handler *sinkHandler
	out     *lockedBuffer
	server  *httptest.Server
}

func setupSink(t *testing.T, cfg sinkConfig) *sinkBundle {
	t.Helper()
	if cfg.Status == 0 {
		cfg.Status = http.StatusOK
	}
	out := &lockedBuffer{}
	h := newSinkHandler(cfg, out)
	h.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &sinkBundle{handler: h, out: out, server: srv}
}

// post sends body to the sink with the given headers and returns the status.
func (b *sinkBundle) post(t *testing.T, path, body string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSinkFailFirstThenStatus(t *testing.T) {
	b := setupSink(t, sinkConfig{Status: http.StatusAccepted, FailFirst: 2})
	var got []int
	for range 4 {
		got = append(got, b.post(t, "/hook", "{}"))
	}
	want := []int{503, 503, 202, 202}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses = %v, want %v", got, want)
		}
	}
	var sum strings.Builder
	b.handler.writeSummary(&sum)
	if s := sum.String(); s != "herald sink: 4 requests\n  202  2\n  503  2\n" {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestSinkStatus(t *testing.T) {
	b := setupSink(t, sinkConfig{Status: http.StatusGone})
	if got := b.post(t, "/", "x"); got != http.StatusGone {
		t.Fatalf("status = %d, want 410", got)
	}
}

func TestSinkPrintsLine(t *testing.T) {
	b := setupSink(t, sinkConfig{})
	body := `{"specversion":"1.0","id":"evt-1","source":"/billing","type":"invoice.paid","data":{"n":1}}`
	b.post(t, "/hooks/a?x=1", body,
		"Content-Type", "application/cloudevents+json",
		"Webhook-Id", "dlv_01abc", "Herald-Delivery-Attempt", "3")
	want := "2026-01-02T03:04:05.000Z POST /hooks/a?x=1 webhook-id=dlv_01abc attempt=3 type=invoice.paid id=evt-1 " +
		strconv.Itoa(len(body)) + "B -> 200\n  " + body + "\n"
	if got := b.out.String(); got != want {
		t.Fatalf("output:\n got %q\nwant %q", got, want)
	}
}

func TestSinkPrintsBatchBinaryAndPlain(t *testing.T) {
	b := setupSink(t, sinkConfig{})
	b.post(t, "/", `[{"specversion":"1.0","id":"a","source":"s","type":"t1"},{"specversion":"1.0","id":"b","source":"s","type":"t2"}]`,
		"Content-Type", "application/cloudevents-batch+json", "Webhook-Id", "dlv_batch")
	b.post(t, "/", "raw bytes", "Content-Type", "text/plain",
		"Ce-Specversion", "1.0", "Ce-Id", "bin 1", "Ce-Source", "s", "Ce-Type", "t3")
	b.post(t, "/", "\x00\x01", "Content-Type", "application/octet-stream")
	out := b.out.String()
	for _, want := range []string{
		"webhook-id=dlv_batch attempt=- events=2 type=t1 id=a ",
		`webhook-id=- attempt=- type=t3 id="bin 1" 9B -> 200` + "\n  raw bytes\n",
		"attempt=- 2B -> 200\n  \"\\x00\\x01\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSinkTruncatesBody(t *testing.T) {
	b := setupSink(t, sinkConfig{})
	body := strings.Repeat("é", 3000) // 6000 bytes
	b.post(t, "/", body)
	out := b.out.String()
	printed := strings.Count(out, "é")
	if printed != sinkPrintBody/2 || !strings.Contains(out, "… (3952 more bytes)") {
		t.Fatalf("printed %d runes:\n%s", printed, out[len(out)-80:])
	}
}

func TestSinkBodyTooLarge(t *testing.T) {
	b := setupSink(t, sinkConfig{Quiet: true})
	if got := b.post(t, "/", strings.Repeat("x", sinkMaxBody+1)); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413", got)
	}
	// A refused body does not use up a --fail-first request or count as one.
	if got := b.post(t, "/", strings.Repeat("x", sinkMaxBody)); got != http.StatusOK {
		t.Fatalf("status = %d, want 200", got)
	}
}

func TestSinkQuiet(t *testing.T) {
	b := setupSink(t, sinkConfig{Quiet: true, FailFirst: 1})
	b.post(t, "/", "a", "Webhook-Id", "dlv_1")
	b.post(t, "/", "b", "Webhook-Id", "dlv_2")
	if out := b.out.String(); out != "" {
		t.Fatalf("quiet sink printed %q", out)
	}
	total, by := b.handler.counts()
	if total != 2 || by[503] != 1 || by[200] != 1 {
		t.Fatalf("counts = %d %v", total, by)
	}
}

func TestSinkDelayEndsWhenClientLeaves(t *testing.T) {
	h := newSinkHandler(sinkConfig{Status: 200, Delay: time.Hour, Quiet: true}, &lockedBuffer{})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader("x"))
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), req)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handler still waiting after the client left")
	}
}

func TestSinkFlags(t *testing.T) {
	var stderr strings.Builder
	if code := runSink(context.Background(), []string{"-h"}, &strings.Builder{}, &stderr); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for _, flag := range []string{"-addr", "-status", "-fail-first", "-delay", "-quiet", "-secret", "-public-key", "signature=valid", "10 MiB", "2 KiB"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Fatalf("usage lacks %q:\n%s", flag, stderr.String())
		}
	}
	for _, args := range [][]string{
		{"--status", "99"}, {"--status", "600"}, {"--fail-first", "-1"}, {"--delay", "-1s"},
		{"--delay", "soon"}, {"extra"}, {"--secret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, {"--secret", "whsec_!!"},
		{"--public-key", "whpk_c2hvcnQ="}, {"--secret", "whsec_c2hvcnQ=", "--public-key", "whpk_c2hvcnQ="},
	} {
		stderr.Reset()
		if code := runSink(context.Background(), args, &strings.Builder{}, &stderr); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
	cfg, _, ok := parseSinkFlags([]string{"--addr", ":0", "--status", "204", "--fail-first", "3", "--delay", "250ms", "--quiet"}, &stderr)
	want := sinkConfig{Addr: ":0", Status: 204, FailFirst: 3, Delay: 250 * time.Millisecond, Quiet: true}
	if !ok || cfg != want {
		t.Fatalf("parsed %+v, want %+v", cfg, want)
	}
}

func TestServeSinkLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	addrc := make(chan net.Addr, 1)
	code := make(chan int, 1)
	cfg := sinkConfig{Addr: "127.0.0.1:0", Status: 201, FailFirst: 1}
	go func() { code <- serveSink(ctx, cfg, stdout, stderr, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case c := <-code:
		t.Fatalf("serveSink exited %d: %s", c, stderr.String())
	}
	for _, want := range []int{503, 201} {
		resp, err := http.Post("http://"+addr.String()+"/h", "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveSink did not stop")
	}
	if out := stdout.String(); !strings.HasSuffix(out, "herald sink: 2 requests\n  201  1\n  503  1\n") {
		t.Fatalf("stdout:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "listening on http://"+addr.String()) {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// TestSinkVerifiesSignatures: with --secret or --public-key the sink prints
// whether each request's signature is valid.
func TestSinkVerifiesSignatures(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := signing.New(signing.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := `{"specversion":"1.0","id":"e1","source":"/s","type":"t"}`
	sign := func(sg store.Signing, body string) string {
		return signing.NewSigner(sg).Sign("dlv_1", now.Unix(), []byte(body), now)
	}
	hmacSig := sign(store.Signing{Algorithm: signing.HMACSHA256, Keys: []store.SigningKey{{Key: key}}}, body)
	edSig := sign(store.Signing{Algorithm: signing.Ed25519, Keys: []store.SigningKey{seed}}, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, c := range []struct {
		name string
		cfg  sinkConfig
		sig  string
		body string
		want string
	}{
		{"hmac", sinkConfig{Secret: secret}, hmacSig, body, "signature=valid"},
		{"hmac, body changed", sinkConfig{Secret: secret}, hmacSig, body + " ", "signature=invalid"},
		{"hmac, no signature", sinkConfig{Secret: secret}, "", body, "signature=invalid"},
		{"hmac, ed25519 signature", sinkConfig{Secret: secret}, edSig, body, "signature=invalid"},
		{"ed25519", sinkConfig{PublicKey: signing.PublicKey(seed.Key)}, edSig, body, "signature=valid"},
		{"ed25519 among others", sinkConfig{PublicKey: signing.PublicKey(seed.Key)}, hmacSig + " " + edSig, body, "signature=valid"},
		{"ed25519, body changed", sinkConfig{PublicKey: signing.PublicKey(seed.Key)}, edSig, "{}", "signature=invalid"},
	} {
		args := []string{"--secret", c.cfg.Secret}
		if c.cfg.PublicKey != "" {
			args = []string{"--public-key", c.cfg.PublicKey}
		}
		cfg, _, ok := parseSinkFlags(args, &strings.Builder{})
		if !ok {
			t.Fatalf("%s: flags %v refused", c.name, args)
		}
		b := setupSink(t, cfg)
		b.post(t, "/", c.body, "Webhook-Id", "dlv_1", "Webhook-Timestamp", ts, "Webhook-Signature", c.sig)
		if line, _, _ := strings.Cut(b.out.String(), "\n"); !strings.Contains(line, " "+c.want+" ") {
			t.Errorf("%s: printed %q; want %s", c.name, line, c.want)
		}
	}
	b := setupSink(t, sinkConfig{})
	b.post(t, "/", body, "Webhook-Signature", hmacSig)
	if strings.Contains(b.out.String(), "signature=") {
		t.Errorf("without --secret the sink printed %q", b.out.String())
	}
}
