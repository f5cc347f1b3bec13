package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
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

  TIME METHOD PATH webhook-id=ID attempt=N [signature=valid|invalid] [events=N] [type=TYPE id=EVENT_ID] SIZE -> STATUS

With --secret (the subscription's whsec_ secret, from GET
/v1/subscriptions/{id}/secret) or --public-key (its whpk_ key, for ed25519
signing), the sink checks each request's webhook-signature as a Standard
Webhooks receiver does (over webhook-id, webhook-timestamp and the body as
received) and prints signature=valid or signature=invalid; it answers as
configured either way. type and id are shown when the body is a CloudEvent in any publish format
(for a batch, those of the first event, with events=N); "-" marks a header that
is absent. The body follows, indented, cut to 2 KiB. With --quiet nothing is
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

	verifier *signing.Verifier // from Secret or PublicKey; nil: none
}

// runSink implements `herald sink`: it listens until ctx ends (SIGINT or
// SIGTERM), then prints the summary. It returns 0 on a clean stop, 1 when
// it cannot listen, and 2 on a usage error.
func runSink(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseSinkFlags(args, stderr)
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
	fs.Usage = func() {
		fmt.Fprint(stderr, sinkUsage)
		fs.PrintDefaults()
	}
	return fs, cfg
}

// parseSinkFlags parses the flags of herald sink. When ok is false the caller
// exits with code (0 for -h, 2 for a usage error).
func parseSinkFlags(args []string, stderr io.Writer) (cfg sinkConfig, code int, ok bool) {
	fs, c := newSinkFlags(stderr)
	if _, code, ok := parseFlags(fs, args, stderr, false); !ok {
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

// ServeHTTP reads the body (up to sinkMaxBody), picks the status, waits
// cfg.Delay (or until the client goes away), prints the request and answers.
func (h *sinkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sinkMaxBody))
	var status int
	if err != nil {
		status = http.StatusBadRequest
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			status = http.StatusRequestEntityTooLarge
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
		line = h.format(r, body, status)
	}
	h.mu.Lock()
	h.byStatus[status]++
	if line != nil {
		_, _ = h.out.Write(line)
	}
	h.mu.Unlock()
	w.WriteHeader(status)
}

// format returns the printed form of one request: its line, then the body.
func (h *sinkHandler) format(r *http.Request, body []byte, status int) []byte {
	var b bytes.Buffer
	b.WriteString(h.now().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteByte(' ')
	b.WriteString(r.Method)
	b.WriteByte(' ')
	b.WriteString(r.URL.RequestURI()) // escaped: no spaces or control characters
	b.WriteString(" webhook-id=")
	b.WriteString(logValue(r.Header.Get("Webhook-Id")))
	b.WriteString(" attempt=")
	b.WriteString(logValue(r.Header.Get("Herald-Delivery-Attempt")))
	if v := h.cfg.verifier; v != nil {
		if v.Verify(r.Header.Get("Webhook-Id"), r.Header.Get("Webhook-Timestamp"), body, r.Header.Get("Webhook-Signature")) == nil {
			b.WriteString(" signature=valid")
		} else {
			b.WriteString(" signature=invalid")
		}
	}
	if events, err := event.Parse(r.Header, body); err == nil && len(events) > 0 {
		if len(events) > 1 {
			fmt.Fprintf(&b, " events=%d", len(events))
		}
		b.WriteString(" type=")
		b.WriteString(logValue(events[0].Type))
		b.WriteString(" id=")
		b.WriteString(logValue(events[0].ID))
	}
	fmt.Fprintf(&b, " %dB -> %d\n", len(body), status)
	if len(body) > 0 {
		writeBody(&b, body)
	}
	return b.Bytes()
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
