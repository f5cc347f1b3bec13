package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/signing"
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
	resp, _ := b.send(t, http.MethodPost, path, body, headers...)
	return resp.StatusCode
}

// send sends a request to the sink with the given headers and returns the
// response and its body.
func (b *sinkBundle) send(t *testing.T, method, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.server.URL+path, strings.NewReader(body))
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
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(got)
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
	want := "2026-01-02T03:04:05.000Z POST /hooks/a?x=1 webhook-id=dlv_01abc attempt=3 schema=cloudevents type=invoice.paid id=evt-1 " +
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
		"webhook-id=dlv_batch attempt=- schema=cloudevents-batch events=2 type=t1 id=a ",
		`webhook-id=- attempt=- schema=cloudevents-binary type=t3 id="bin 1" 9B -> 200` + "\n  raw bytes\n",
		"attempt=- schema=data type=- id=- 2B -> 200\n  \"\\x00\\x01\"\n",
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
	var stdout, stderr strings.Builder
	if code := runSink(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for _, flag := range []string{"-addr", "-status", "-fail-first", "-delay", "-quiet", "-secret", "-public-key", "-validate",
		"signature=valid", "schema=SCHEMA", "[events=N]", "cloudevents-binary", "pubsub", "validationResponse", "WebHook-Allowed-Origin", "10 MiB", "2 KiB"} {
		if !strings.Contains(stdout.String(), flag) {
			t.Fatalf("usage lacks %q:\n%s", flag, stdout.String())
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
	cfg, _, ok := parseSinkFlags([]string{"--addr", ":0", "--status", "204", "--fail-first", "3", "--delay", "250ms", "--quiet", "--validate"}, io.Discard, &stderr)
	want := sinkConfig{Addr: ":0", Status: 204, FailFirst: 3, Delay: 250 * time.Millisecond, Quiet: true, Validate: true}
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
	sign := func(sg signing.Keyring, body string) string {
		return signing.NewSigner(sg).Sign("dlv_1", now.Unix(), []byte(body), now)
	}
	hmacSig := sign(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: key}}}, body)
	edSig := sign(signing.Keyring{Algorithm: signing.Ed25519, Keys: []signing.Key{seed}}, body)
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
		cfg, _, ok := parseSinkFlags(args, io.Discard, &strings.Builder{})
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

// storedPayload returns an event as Herald stores it (Event.Marshal).
func storedPayload(t *testing.T, e event.Event) []byte {
	t.Helper()
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSinkSchemas: the sink tells each delivery schema from the request
// Herald sends (event.Encode of stored events), prints the batch's size and
// the first event's type and id, and verifies the signature over the body
// whatever the schema.
func TestSinkSchemas(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	signer := signing.NewSigner(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: key}}})
	published := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	first := storedPayload(t, event.Event{
		ID: "evt 1", Source: "/billing", Type: "invoice.paid", Subject: "inv/42",
		DataContentType: "application/json", Data: json.RawMessage(`{"amount":12}`),
		Extensions: map[string]any{"dataversion": "2", "tenant": "acme"},
	})
	second := storedPayload(t, event.Event{
		ID: "evt-2", Source: "/billing", Type: "invoice.voided", Data: json.RawMessage(`{"amount":3}`),
	})
	binary := storedPayload(t, event.Event{
		ID: "evt-3", Source: "/files", Type: "file.stored", DataContentType: "image/png", DataBase64: "iVBORw0KGgo=",
	})
	item := func(p []byte, attempt int) event.Item {
		return event.Item{Payload: p, DeliveryID: fmt.Sprintf("dlv_%d", attempt), Attempt: attempt, PublishedAt: published}
	}
	target := event.Target{AccountID: "acc_1", SubscriptionName: "billing"}
	batched := target
	batched.Batch = true
	cfg, _, ok := parseSinkFlags([]string{"--secret", secret}, io.Discard, io.Discard)
	if !ok {
		t.Fatal("--secret refused")
	}
	for _, c := range []struct {
		name   string
		schema string
		target event.Target
		items  []event.Item
		want   string // in the line, after signature=valid
	}{
		{"structured", event.SchemaCloudEvents, target, []event.Item{item(first, 1)},
			`schema=cloudevents type=invoice.paid id="evt 1" `},
		{"batch", event.SchemaCloudEvents, batched, []event.Item{item(first, 1), item(second, 2)},
			`schema=cloudevents-batch events=2 type=invoice.paid id="evt 1" `},
		{"batch of one", event.SchemaCloudEvents, batched, []event.Item{item(second, 1)},
			`schema=cloudevents-batch events=1 type=invoice.voided id=evt-2 `},
		{"binary", event.SchemaCloudEventsBinary, target, []event.Item{item(first, 1)},
			`schema=cloudevents-binary type=invoice.paid id="evt 1" `},
		{"binary, binary data", event.SchemaCloudEventsBinary, target, []event.Item{item(binary, 1)},
			`schema=cloudevents-binary type=file.stored id=evt-3 `},
		{"eventgrid", event.SchemaEventGrid, batched, []event.Item{item(second, 3), item(first, 1)},
			`schema=eventgrid events=2 type=invoice.voided id=evt-2 `},
		{"eventgrid, one", event.SchemaEventGrid, target, []event.Item{item(first, 1)},
			`schema=eventgrid events=1 type=invoice.paid id="evt 1" `},
		{"data", event.SchemaData, target, []event.Item{item(first, 1)},
			`schema=data type=- id=- `},
		{"data, binary", event.SchemaData, target, []event.Item{item(binary, 1)},
			`schema=data type=- id=- `},
		{"pubsub", event.SchemaPubSub, target, []event.Item{item(first, 2)},
			`schema=pubsub type=invoice.paid id="evt 1" `},
	} {
		enc, err := event.Encode(c.schema, c.target, c.items)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		now := time.Now()
		headers := []string{"Webhook-Id", "msg_1", "Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10),
			"Webhook-Signature", signer.Sign("msg_1", now.Unix(), enc.Body, now), "Herald-Delivery-Attempt", "1"}
		if enc.ContentType != "" {
			headers = append(headers, "Content-Type", enc.ContentType)
		}
		for _, h := range enc.Header {
			headers = append(headers, h[0], h[1])
		}
		b := setupSink(t, cfg)
		if got := b.post(t, "/hook", string(enc.Body), headers...); got != http.StatusOK {
			t.Errorf("%s: status %d", c.name, got)
		}
		line, _, _ := strings.Cut(b.out.String(), "\n")
		want := "POST /hook webhook-id=msg_1 attempt=1 signature=valid " + c.want + strconv.Itoa(len(enc.Body)) + "B -> 200"
		if !strings.Contains(line, want) {
			t.Errorf("%s: printed\n  %s\nwant\n  %s", c.name, line, want)
		}
	}
}

// TestSinkSchemasByShape: without the headers Herald sends, the sink still
// tells a JSON body's schema by its shape, and anything else is data.
func TestSinkSchemasByShape(t *testing.T) {
	b := setupSink(t, sinkConfig{})
	for _, c := range []struct{ body, ct, want string }{
		{`[{"id":"g1","subject":"","eventType":"t.eg","eventTime":"2026-01-02T03:04:05Z","data":{}}]`, "application/json",
			"schema=eventgrid events=1 type=t.eg id=g1 "},
		{`[{"specversion":"1.0","id":"c1","source":"s","type":"t.ce"},{"specversion":"1.0","id":"c2","source":"s","type":"t.ce"}]`,
			"application/json; charset=utf-8", "schema=cloudevents-batch events=2 type=t.ce id=c1 "},
		{`{"specversion":"1.0","id":"c3","source":"s","type":"t.one"}`, "application/json", "schema=cloudevents type=t.one id=c3 "},
		{`{"message":{"data":"e30=","attributes":{"type":"t.ps","id":"p1"},"messageId":"m1"},"subscription":"s"}`,
			"application/json", "schema=pubsub type=t.ps id=p1 "},
		{`{"message":"hello","subscription":"s"}`, "application/json", "schema=data type=- id=- "},
		{`[1,2]`, "application/json", "schema=data type=- id=- "},
		{`{"specversion":"1.0","id":"x"}`, "text/plain", "schema=data type=- id=- "},
		{`not json`, "application/cloudevents+json", "schema=cloudevents type=- id=- "},
		{`{}`, "application/cloudevents-batch+json", "schema=cloudevents-batch events=0 type=- id=- "},
		{``, "", "schema=data type=- id=- "},
	} {
		before := len(b.out.String())
		b.post(t, "/", c.body, "Content-Type", c.ct)
		line, _, _ := strings.Cut(b.out.String()[before:], "\n")
		if !strings.Contains(line, " "+c.want) {
			t.Errorf("%s as %q: printed %q, want %q", c.body, c.ct, line, c.want)
		}
	}
}

// eventGridValidation returns the body of Herald's Event Grid validation
// request.
func eventGridValidation(code string) string {
	return `[{"id":"validation-sub_1","topic":"/accounts/acc_1","subject":"",` +
		`"eventType":"Microsoft.EventGrid.SubscriptionValidationEvent","eventTime":"2026-01-02T03:04:05Z",` +
		`"data":{"validationCode":"` + code + `","validationUrl":"http://127.0.0.1:8080/v1/validation/sub_1?code=` + code + `"},` +
		`"dataVersion":"1","metadataVersion":"1"}]`
}

// TestSinkValidate: with --validate the sink passes both handshakes, whatever
// --status and --fail-first say, and prints a line for each; other requests
// are answered as configured.
func TestSinkValidate(t *testing.T) {
	b := setupSink(t, sinkConfig{Status: http.StatusInternalServerError, FailFirst: 1, Validate: true})
	const code = "512d38b6-c7b8-40c8-89fe-f46f9e9622b6"
	resp, body := b.send(t, http.MethodPost, "/eg", eventGridValidation(code),
		"Content-Type", "application/json", "Aeg-Event-Type", "SubscriptionValidation", "Aeg-Subscription-Name", "BILLING")
	var answer map[string]string
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &answer) != nil ||
		len(answer) != 1 || answer["validationResponse"] != code || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("eventgrid handshake: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	resp, body = b.send(t, http.MethodOptions, "/ce", "", "WebHook-Request-Origin", "herald.example.com", "WebHook-Request-Rate", "120")
	if resp.StatusCode != http.StatusOK || body != "" || resp.Header.Get("WebHook-Allowed-Origin") != "herald.example.com" ||
		resp.Header.Get("WebHook-Allowed-Rate") != "*" {
		t.Errorf("cloudevents handshake: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	resp, _ = b.send(t, http.MethodOptions, "/ce", "", "WebHook-Request-Origin", "herald.example.com")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("WebHook-Allowed-Origin") != "herald.example.com" ||
		resp.Header.Values("WebHook-Allowed-Rate") != nil {
		t.Errorf("cloudevents handshake without a rate: %d %v", resp.StatusCode, resp.Header)
	}

	// Not handshakes: answered as configured, the first with the 503 that
	// the handshakes did not use up.
	notHandshakes := []struct {
		method, body string
		headers      []string
	}{
		{http.MethodOptions, "", nil},
		{http.MethodPost, `[{"id":"e","eventType":"invoice.paid","data":{}}]`, []string{"Aeg-Event-Type", "SubscriptionValidation"}},
		{http.MethodPost, eventGridValidation(""), []string{"Aeg-Event-Type", "SubscriptionValidation"}},
		{http.MethodPost, eventGridValidation(code), []string{"Aeg-Event-Type", "Notification"}},
	}
	for i, c := range notHandshakes {
		resp, body := b.send(t, c.method, "/", c.body, c.headers...)
		want := http.StatusInternalServerError
		if i == 0 {
			want = http.StatusServiceUnavailable
		}
		if resp.StatusCode != want || body != "" || resp.Header.Get("WebHook-Allowed-Origin") != "" {
			t.Errorf("%s %s %v: %d %q, want a plain %d", c.method, c.body, c.headers, resp.StatusCode, body, want)
		}
	}

	out := b.out.String()
	for _, want := range []string{
		"POST /eg webhook-id=- attempt=- validation eventgrid code=" + code + " -> 200\n  [{",
		"OPTIONS /ce webhook-id=- attempt=- validation cloudevents origin=herald.example.com rate=120 -> 200\n",
		"OPTIONS /ce webhook-id=- attempt=- validation cloudevents origin=herald.example.com -> 200\n",
		"OPTIONS / webhook-id=- attempt=- schema=data type=- id=- 0B -> 503\n",
		"schema=eventgrid events=1 type=Microsoft.EventGrid.SubscriptionValidationEvent id=validation-sub_1 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	total, by := b.handler.counts()
	if total != 7 || by[200] != 3 || by[503] != 1 || by[500] != 3 {
		t.Errorf("counts = %d %v", total, by)
	}
}

// TestSinkWithoutValidate: without --validate a handshake is answered like
// any other request, so it fails: no validationResponse, no
// WebHook-Allowed-Origin.
func TestSinkWithoutValidate(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusNotFound} {
		b := setupSink(t, sinkConfig{Status: status})
		resp, body := b.send(t, http.MethodPost, "/eg", eventGridValidation("c0de"),
			"Content-Type", "application/json", "Aeg-Event-Type", "SubscriptionValidation")
		if resp.StatusCode != status || body != "" {
			t.Errorf("eventgrid handshake: %d %q, want a plain %d", resp.StatusCode, body, status)
		}
		resp, _ = b.send(t, http.MethodOptions, "/ce", "", "WebHook-Request-Origin", "herald.example.com", "WebHook-Request-Rate", "120")
		if resp.StatusCode != status || resp.Header.Get("WebHook-Allowed-Origin") != "" || resp.Header.Get("WebHook-Allowed-Rate") != "" {
			t.Errorf("cloudevents handshake: %d %v, want a plain %d", resp.StatusCode, resp.Header, status)
		}
		out := b.out.String()
		if strings.Contains(out, "validation ") ||
			!strings.Contains(out, "POST /eg webhook-id=- attempt=- schema=eventgrid events=1 type=Microsoft.EventGrid.SubscriptionValidationEvent id=validation-sub_1 ") ||
			!strings.Contains(out, fmt.Sprintf("OPTIONS /ce webhook-id=- attempt=- schema=data type=- id=- 0B -> %d\n", status)) {
			t.Errorf("output:\n%s", out)
		}
	}
}

// TestSinkValidateSigned: a signed handshake shows whether its signature is
// valid; an unsigned one (Herald's) shows nothing.
func TestSinkValidateSigned(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="
	cfg, _, ok := parseSinkFlags([]string{"--secret", secret, "--validate"}, io.Discard, io.Discard)
	if !ok {
		t.Fatal("flags refused")
	}
	b := setupSink(t, cfg)
	b.send(t, http.MethodOptions, "/", "", "WebHook-Request-Origin", "h")
	b.send(t, http.MethodPost, "/", eventGridValidation("c"), "Aeg-Event-Type", "SubscriptionValidation",
		"Webhook-Id", "v1", "Webhook-Timestamp", "1", "Webhook-Signature", "v1,bm9wZQ==")
	out := b.out.String()
	if !strings.Contains(out, "attempt=- validation cloudevents origin=h -> 200") ||
		!strings.Contains(out, "attempt=- signature=invalid validation eventgrid code=c -> 200") {
		t.Errorf("output:\n%s", out)
	}
}
