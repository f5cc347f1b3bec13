package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/signing"
)

// Limits of herald sink.
const (
	// sinkMaxBody is the largest request body the sink reads; a larger one
	// is answered 413.
	sinkMaxBody = 10 << 20
	// sinkPrintBody is how much of a body the sink prints.
	sinkPrintBody = 2 << 10
	// sinkShutdownGrace bounds how long shutdown waits for requests in
	// progress (they may be sleeping out --delay) before closing them.
	sinkShutdownGrace = 5 * time.Second
)

const sinkUsage = `Usage: herald sink [flags]

Runs a local webhook receiver for trying Herald out and for benchmarks. It
answers every request (any method, any path) with --status, or with 503 for the
first --fail-first requests, after waiting --delay. For each request it prints
one line to stdout:

  TIME METHOD PATH webhook-id=ID attempt=N [signature=valid|invalid] schema=SCHEMA [events=N] type=TYPE id=EVENT_ID SIZE -> STATUS

SCHEMA is the delivery schema the request came in, told from its headers and
body as a receiver tells it: cloudevents (application/cloudevents+json, or a
CloudEvent as application/json), cloudevents-batch
(application/cloudevents-batch+json, or an array of CloudEvents),
cloudevents-binary (a ce-specversion header), eventgrid (an aeg-event-type
header, or an array of Event Grid events), pubsub (the Pub/Sub push envelope,
{"message": {...}, "subscription": ...}) or data (anything else: the data
alone). For the two batch schemas, cloudevents-batch and eventgrid, events=N
counts the array's events. type and id are those of the first event: its type
and id members (eventType and id for eventgrid), the ce-type and ce-id headers
for cloudevents-binary, the type and id attributes of the message for pubsub;
a data request has neither. "-" marks a header or value that is absent.

With --secret (the subscription's whsec_ secret, from GET
/v1/subscriptions/{id}/secret) or --public-key (its whpk_ key, for ed25519
signing), the sink checks each request's webhook-signature as a Standard
Webhooks receiver does (over webhook-id, webhook-timestamp and the body exactly
as received, whatever the schema) and prints signature=valid or
signature=invalid; it answers as configured either way.

With --validate the sink also passes the endpoint validation handshakes Herald
sends to a subscription created with "validation", answering 200 after --delay
whatever --status and --fail-first say (a handshake does not use up a
--fail-first request):

  - eventgrid: a request with aeg-event-type: SubscriptionValidation whose body
    is an array holding a Microsoft.EventGrid.SubscriptionValidationEvent gets
    {"validationResponse": CODE}, CODE the event's data.validationCode;
  - cloudevents: an OPTIONS request with WebHook-Request-Origin gets
    WebHook-Allowed-Origin: that origin (and WebHook-Allowed-Rate: * when it
    had WebHook-Request-Rate).

Each prints one line (signature= only when the handshake is signed):

  TIME METHOD PATH webhook-id=ID attempt=N [signature=...] validation eventgrid code=CODE -> 200
  TIME OPTIONS PATH webhook-id=ID attempt=N validation cloudevents origin=ORIGIN [rate=RATE] -> 200

Without --validate a handshake is answered like any other request, so the
subscription's validation fails.

The body follows each line, indented, cut to 2 KiB. With --quiet nothing is
printed per request. Bodies are read up to 10 MiB; a larger one is answered
413. On SIGINT or SIGTERM the sink stops and prints the number of requests by
status it answered.

Flags:
`

// sinkConfig is the behaviour of herald sink, from its flags.
type sinkConfig struct {
	Addr      string        // address to listen on
	Status    int           // status answered once FailFirst requests are done
	FailFirst int           // requests answered 503 first
	Delay     time.Duration // wait before each answer
	Quiet     bool          // count requests without printing them
	Secret    string        // whsec_ secret to verify v1 signatures with
	PublicKey string        // whpk_ key to verify v1a signatures with
	Validate  bool          // answer endpoint validation handshakes

	verifier *signing.Verifier // from Secret or PublicKey; nil: none
}

// runSink implements `herald sink`: it listens until ctx ends (SIGINT or
// SIGTERM), then prints the summary. It returns 0 on a clean stop, 1 when
// it cannot listen, and 2 on a usage error.
func runSink(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseSinkFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	return serveSink(ctx, cfg, stdout, stderr, nil)
}

// newSinkFlags returns herald sink's flag set, writing usage and errors to
// stderr, and the configuration its flags set.
func newSinkFlags(stderr io.Writer) (*flag.FlagSet, *sinkConfig) {
	cfg := &sinkConfig{}
	fs := flag.NewFlagSet("herald sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:9000", "address to listen on (port 0 picks a free port)")
	fs.IntVar(&cfg.Status, "status", http.StatusOK, "status code to answer, 200 to 599")
	fs.IntVar(&cfg.FailFirst, "fail-first", 0, "answer 503 to the first `N` requests, then --status")
	fs.DurationVar(&cfg.Delay, "delay", 0, "wait this long before answering each request (Go duration, e.g. 250ms)")
	fs.BoolVar(&cfg.Quiet, "quiet", false, "print nothing per request, only the summary at exit")
	fs.StringVar(&cfg.Secret, "secret", "", "verify each request's v1 signature with this `whsec_…` secret and print whether it is valid")
	fs.StringVar(&cfg.PublicKey, "public-key", "", "verify each request's v1a (ed25519) signature with this `whpk_…` key and print whether it is valid")
	fs.BoolVar(&cfg.Validate, "validate", false, "answer the endpoint validation handshakes (eventgrid and cloudevents) with 200 and the answer that passes them")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sinkUsage)
		fs.PrintDefaults()
	}
	return fs, cfg
}

// parseSinkFlags parses the flags of herald sink. When ok is false the caller
// exits with code (0 for -h, 2 for a usage error).
func parseSinkFlags(args []string, stdout, stderr io.Writer) (cfg sinkConfig, code int, ok bool) {
	fs, c := newSinkFlags(stderr)
	if _, code, ok := parseFlags(fs, args, stdout, stderr, false); !ok {
		return *c, code, false
	}
	cfg = *c
	var err error
	switch {
	case cfg.Status < 200 || cfg.Status > 599:
		err = fmt.Errorf("--status %d: must be between 200 and 599", cfg.Status)
	case cfg.FailFirst < 0:
		err = fmt.Errorf("--fail-first %d: must not be negative", cfg.FailFirst)
	case cfg.Delay < 0:
		err = fmt.Errorf("--delay %s: must not be negative", cfg.Delay)
	case cfg.Secret != "" && cfg.PublicKey != "":
		err = errors.New("--secret and --public-key: give one of them")
	case cfg.Secret != "":
		if cfg.verifier, err = signing.NewSecretVerifier(cfg.Secret); err != nil {
			err = fmt.Errorf("--secret: %w", err)
		}
	case cfg.PublicKey != "":
		if cfg.verifier, err = signing.NewPublicKeyVerifier(cfg.PublicKey); err != nil {
			err = fmt.Errorf("--public-key: %w", err)
		}
	}
	if err == nil {
		err = checkAddr("--addr", cfg.Addr)
	}
	if err != nil {
		return cfg, usageError(stderr, fs.Name(), err, nil), false
	}
	return cfg, 0, true
}

// serveSink listens on cfg.Addr and serves the sink until ctx is done, then
// shuts down and prints the summary to stdout. ready, if not nil, is called
// with the listening address once requests can be sent.
func serveSink(ctx context.Context, cfg sinkConfig, stdout, stderr io.Writer, ready func(net.Addr)) int {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "herald sink: %v\n", err)
		return 1
	}
	h := newSinkHandler(cfg, stdout)
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}
	fmt.Fprintf(stderr, "herald sink listening on http://%s (%s)\n", ln.Addr(), cfg.describe())
	if ready != nil {
		ready(ln.Addr())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	code := 0
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		fmt.Fprintf(stderr, "herald sink: %v\n", err)
		code = 1
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), sinkShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		_ = hs.Close()
	}
	h.writeSummary(stdout)
	return code
}

// describe sums up the configured answers for the start-up message.
func (c sinkConfig) describe() string {
	s := "answering " + strconv.Itoa(c.Status)
	if c.FailFirst > 0 {
		s += fmt.Sprintf(" after %d × 503", c.FailFirst)
	}
	if c.Delay > 0 {
		s += " after a delay of " + c.Delay.String()
	}
	if c.Quiet {
		s += ", quiet"
	}
	if c.verifier != nil {
		s += ", verifying signatures"
	}
	if c.Validate {
		s += ", passing validation handshakes"
	}
	return s
}

// sinkHandler answers and prints every request; it is safe for concurrent
// use.
type sinkHandler struct {
	cfg sinkConfig
	now func() time.Time

	mu       sync.Mutex // guards out, seq and byStatus
	out      io.Writer
	seq      int         // requests given a status from the configuration
	byStatus map[int]int // requests answered, by status
}

// newSinkHandler returns the handler of herald sink, printing to out.
func newSinkHandler(cfg sinkConfig, out io.Writer) *sinkHandler {
	return &sinkHandler{cfg: cfg, now: time.Now, out: out, byStatus: make(map[int]int)}
}

// ServeHTTP reads the body (up to sinkMaxBody), picks the status (200 for a
// validation handshake it answers), waits cfg.Delay (or until the client
// goes away), prints the request and answers.
func (h *sinkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sinkMaxBody))
	var status int
	var hs handshake
	if err != nil {
		status = http.StatusBadRequest
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			status = http.StatusRequestEntityTooLarge
		}
	} else if h.cfg.Validate {
		if hs = detectHandshake(r, body); hs.kind != "" {
			status = http.StatusOK
		}
	}
	h.mu.Lock()
	if status == 0 {
		h.seq++
		status = h.cfg.Status
		if h.seq <= h.cfg.FailFirst {
			status = http.StatusServiceUnavailable
		}
	}
	h.mu.Unlock()

	if h.cfg.Delay > 0 {
		t := time.NewTimer(h.cfg.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}

	var line []byte
	if !h.cfg.Quiet {
		if hs.kind != "" {
			line = h.formatHandshake(r, body, hs)
		} else {
			line = h.format(r, body, status)
		}
	}
	h.mu.Lock()
	h.byStatus[status]++
	if line != nil {
		_, _ = h.out.Write(line)
	}
	h.mu.Unlock()
	if hs.kind != "" {
		hs.answer(w)
		return
	}
	w.WriteHeader(status)
}

// format returns the printed form of one request: its line, then the body.
func (h *sinkHandler) format(r *http.Request, body []byte, status int) []byte {
	var b bytes.Buffer
	h.writePrefix(&b, r, body, true)
	rq := detectSchema(r.Header, body)
	b.WriteString(" schema=")
	b.WriteString(rq.schema)
	if rq.batch {
		fmt.Fprintf(&b, " events=%d", rq.events)
	}
	b.WriteString(" type=")
	b.WriteString(logValue(rq.typ))
	b.WriteString(" id=")
	b.WriteString(logValue(rq.id))
	fmt.Fprintf(&b, " %dB -> %d\n", len(body), status)
	if len(body) > 0 {
		writeBody(&b, body)
	}
	return b.Bytes()
}

// formatHandshake returns the printed form of a validation handshake the
// sink answered: its line, then the body.
func (h *sinkHandler) formatHandshake(r *http.Request, body []byte, hs handshake) []byte {
	var b bytes.Buffer
	h.writePrefix(&b, r, body, r.Header.Get("Webhook-Signature") != "")
	b.WriteString(" validation ")
	b.WriteString(hs.kind)
	switch hs.kind {
	case handshakeEventGrid:
		b.WriteString(" code=")
		b.WriteString(logValue(hs.code))
	case handshakeCloudEvents:
		b.WriteString(" origin=")
		b.WriteString(logValue(hs.origin))
		if hs.rate != "" {
			b.WriteString(" rate=")
			b.WriteString(logValue(hs.rate))
		}
	}
	fmt.Fprintf(&b, " -> %d\n", http.StatusOK)
	if len(body) > 0 {
		writeBody(&b, body)
	}
	return b.Bytes()
}

// writePrefix writes the start of a request's line: time, method, path,
// webhook-id, attempt and, with a verifier and when sig is true, whether the
// signature is valid.
func (h *sinkHandler) writePrefix(b *bytes.Buffer, r *http.Request, body []byte, sig bool) {
	b.WriteString(h.now().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteByte(' ')
	b.WriteString(r.Method)
	b.WriteByte(' ')
	b.WriteString(r.URL.RequestURI()) // escaped: no spaces or control characters
	b.WriteString(" webhook-id=")
	b.WriteString(logValue(r.Header.Get("Webhook-Id")))
	b.WriteString(" attempt=")
	b.WriteString(logValue(r.Header.Get("Herald-Delivery-Attempt")))
	if v := h.cfg.verifier; v != nil && sig {
		// The signature covers the body exactly as received, whatever the
		// schema.
		if v.Verify(r.Header.Get("Webhook-Id"), r.Header.Get("Webhook-Timestamp"), body, r.Header.Get("Webhook-Signature")) == nil {
			b.WriteString(" signature=valid")
		} else {
			b.WriteString(" signature=invalid")
		}
	}
}

// Schemas the sink tells apart: the delivery schemas (event.Schemas), with
// cloudevents split into its single and batch forms.
const (
	sinkCloudEvents      = event.SchemaCloudEvents
	sinkCloudEventsBatch = "cloudevents-batch"
	sinkBinary           = event.SchemaCloudEventsBinary
	sinkEventGrid        = event.SchemaEventGrid
	sinkData             = event.SchemaData
	sinkPubSub           = event.SchemaPubSub
)

// sinkRequest is what the sink makes of a request's headers and body.
type sinkRequest struct {
	schema string // one of the sink* schemas
	batch  bool   // cloudevents-batch or eventgrid: events counts the array
	events int
	// typ and id are the first event's type and id; empty when absent.
	typ, id string
}

// detectSchema tells the delivery schema of a request from its headers and
// body as a receiver does: the content type first (as the CloudEvents HTTP
// binding says), then a ce-specversion header (binary mode), an
// aeg-event-type header (Event Grid), and for JSON the body's shape. It
// never fails: what it cannot read is data, and members it cannot find are
// left empty.
func detectSchema(h http.Header, body []byte) sinkRequest {
	mt := sinkMediaType(h.Get("Content-Type"))
	switch {
	case mt == "application/cloudevents-batch+json":
		return cloudEventsBatch(body)
	case strings.HasPrefix(mt, "application/cloudevents"):
		m := jsonObject(body)
		return sinkRequest{schema: sinkCloudEvents, typ: jsonString(m["type"]), id: jsonString(m["id"])}
	case h.Get("Ce-Specversion") != "":
		return sinkRequest{schema: sinkBinary, typ: percentDecode(h.Get("Ce-Type")), id: percentDecode(h.Get("Ce-Id"))}
	case h.Get("Aeg-Event-Type") != "":
		return eventGridArray(body)
	case !isJSONType(mt):
		return sinkRequest{schema: sinkData}
	}
	switch firstByte(body) {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			break
		}
		first := jsonObject(arr[0])
		if _, ok := first["specversion"]; ok {
			return cloudEventsBatch(body)
		}
		if _, ok := first["eventType"]; ok {
			return eventGridArray(body)
		}
	case '{':
		m := jsonObject(body)
		if msg := jsonObject(m["message"]); msg != nil {
			if _, ok := m["subscription"]; ok {
				attrs := jsonObject(msg["attributes"])
				return sinkRequest{schema: sinkPubSub, typ: jsonString(attrs["type"]), id: jsonString(attrs["id"])}
			}
		}
		if _, ok := m["specversion"]; ok {
			return sinkRequest{schema: sinkCloudEvents, typ: jsonString(m["type"]), id: jsonString(m["id"])}
		}
	}
	return sinkRequest{schema: sinkData}
}

// cloudEventsBatch reads a CloudEvents JSON batch.
func cloudEventsBatch(body []byte) sinkRequest {
	rq := sinkRequest{schema: sinkCloudEventsBatch, batch: true}
	var arr []json.RawMessage
	if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
		first := jsonObject(arr[0])
		rq.events, rq.typ, rq.id = len(arr), jsonString(first["type"]), jsonString(first["id"])
	}
	return rq
}

// eventGridArray reads an array of Event Grid events.
func eventGridArray(body []byte) sinkRequest {
	rq := sinkRequest{schema: sinkEventGrid, batch: true}
	var arr []json.RawMessage
	if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
		first := jsonObject(arr[0])
		rq.events, rq.typ, rq.id = len(arr), jsonString(first["eventType"]), jsonString(first["id"])
	}
	return rq
}

// sinkMediaType returns the lowercased media type of a Content-Type value,
// without parameters.
func sinkMediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isJSONType reports whether mt (as sinkMediaType returns it) denotes JSON.
func isJSONType(mt string) bool {
	return mt == "application/json" || mt == "text/json" ||
		(strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
}

// firstByte returns the first byte of b that is not JSON white space, or 0.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// jsonObject returns the members of raw when it is a JSON object, else nil.
func jsonObject(raw []byte) map[string]json.RawMessage {
	if firstByte(raw) != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// jsonString returns the value of raw when it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if firstByte(raw) != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// percentDecode decodes a CloudEvents binary-mode header value (%XX
// escapes); a value with a bad escape is returned as is.
func percentDecode(v string) string {
	if d, err := url.PathUnescape(v); err == nil {
		return d
	}
	return v
}

// Kinds of validation handshake.
const (
	handshakeEventGrid   = "eventgrid"
	handshakeCloudEvents = "cloudevents"
)

// eventGridValidationEvent is the eventType of an Event Grid subscription
// validation event.
const eventGridValidationEvent = "Microsoft.EventGrid.SubscriptionValidationEvent"

// handshake is an endpoint validation request the sink answers.
type handshake struct {
	kind   string // handshakeEventGrid or handshakeCloudEvents; "" for none
	code   string // eventgrid: the validationCode
	origin string // cloudevents: WebHook-Request-Origin
	rate   string // cloudevents: WebHook-Request-Rate, "" when absent
}

// detectHandshake returns the validation handshake r is, or one with kind
// "" when it is none: an Event Grid SubscriptionValidation request with a
// validation code, or a CloudEvents OPTIONS request with
// WebHook-Request-Origin.
func detectHandshake(r *http.Request, body []byte) handshake {
	if r.Method == http.MethodOptions {
		if origin := r.Header.Get("WebHook-Request-Origin"); origin != "" {
			return handshake{kind: handshakeCloudEvents, origin: origin, rate: r.Header.Get("WebHook-Request-Rate")}
		}
		return handshake{}
	}
	if !strings.EqualFold(r.Header.Get("Aeg-Event-Type"), "SubscriptionValidation") {
		return handshake{}
	}
	var events []struct {
		EventType string `json:"eventType"`
		Data      struct {
			ValidationCode string `json:"validationCode"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &events) != nil || len(events) == 0 ||
		events[0].EventType != eventGridValidationEvent || events[0].Data.ValidationCode == "" {
		return handshake{}
	}
	return handshake{kind: handshakeEventGrid, code: events[0].Data.ValidationCode}
}

// answer writes the answer that passes the handshake.
func (hs handshake) answer(w http.ResponseWriter) {
	switch hs.kind {
	case handshakeEventGrid:
		body, _ := json.Marshal(struct {
			ValidationResponse string `json:"validationResponse"`
		}{hs.code})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	case handshakeCloudEvents:
		w.Header().Set("Allow", "POST")
		w.Header().Set("WebHook-Allowed-Origin", hs.origin)
		if hs.rate != "" {
			w.Header().Set("WebHook-Allowed-Rate", "*")
		}
		w.WriteHeader(http.StatusOK)
	}
}

// writeBody writes up to sinkPrintBody bytes of body, each line indented by
// two spaces. A body that is not printable text is written as a quoted Go
// string instead.
func writeBody(b *bytes.Buffer, body []byte) {
	shown := body
	if len(shown) > sinkPrintBody {
		shown = shown[:sinkPrintBody]
		// Do not cut a UTF-8 sequence in half.
		for i := 0; i < utf8.UTFMax && len(shown) > 0 && !utf8.Valid(shown); i++ {
			shown = shown[:len(shown)-1]
		}
	}
	text := string(shown)
	if !isPrintable(text) {
		text = strconv.Quote(text)
	}
	for line := range strings.Lines(text) {
		b.WriteString("  ")
		b.WriteString(strings.TrimRight(line, "\r\n"))
		b.WriteByte('\n')
	}
	if len(shown) < len(body) {
		fmt.Fprintf(b, "  … (%d more bytes)\n", len(body)-len(shown))
	}
}

// isPrintable reports whether s is valid UTF-8 with no control characters
// other than tab, CR and LF.
func isPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// logValue returns v for a request line: "-" when empty, quoted when it holds
// spaces, quotes, '=' or anything not printable.
func logValue(v string) string {
	if v == "" {
		return "-"
	}
	if strings.ContainsAny(v, ` "=`) || !isPrintable(v) || strings.ContainsAny(v, "\t\r\n") {
		return strconv.Quote(v)
	}
	return v
}

// counts returns how many requests were answered, in all and by status.
func (h *sinkHandler) counts() (total int, byStatus map[int]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	byStatus = make(map[int]int, len(h.byStatus))
	for s, n := range h.byStatus {
		byStatus[s] = n
		total += n
	}
	return total, byStatus
}

// writeSummary prints the number of requests answered, by status.
func (h *sinkHandler) writeSummary(w io.Writer) {
	total, byStatus := h.counts()
	var b strings.Builder
	fmt.Fprintf(&b, "herald sink: %d requests\n", total)
	statuses := make([]int, 0, len(byStatus))
	for s := range byStatus {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	for _, s := range statuses {
		fmt.Fprintf(&b, "  %d  %d\n", s, byStatus[s])
	}
	_, _ = io.WriteString(w, b.String())
}
