package process

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long a start may take until /readyz answers 200.
	startTimeout = 30 * time.Second
	// exitTimeout bounds how long a SIGKILLed process may take to be reaped.
	exitTimeout = 10 * time.Second
	// stderrTail is how much of Herald's stderr a failing test prints.
	stderrTail = 32 << 10
)

// herald is one run of the herald binary.
type herald struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:PORT
	client  *http.Client
	errPath string

	exited  chan struct{} // closed when the process has been reaped
	exitErr error         // cmd.Wait's result; read after exited is closed
	killed  bool          // kill has been called
}

// startHerald runs `herald serve --addr 127.0.0.1:0 --data dataDir
// --allow-private-destinations extra...`,
// reads the address from its "herald listening on" line and waits for
// /readyz to answer 200. Its stderr goes to a file in t.TempDir() that is
// printed (the tail) if the test fails. The process is SIGKILLed at cleanup
// if it is still running.
func startHerald(t testing.TB, name, dataDir string, extra ...string) *herald {
	t.Helper()
	return startHeraldUnder(t, nil, name, dataDir, extra...)
}

// startHeraldUnder is startHerald with the binary run by the command
// wrap (its program and arguments, the binary and its arguments after
// them; nil runs the binary itself): a shell that lowers a limit first,
// for example.
func startHeraldUnder(t testing.TB, wrap []string, name, dataDir string, extra ...string) *herald {
	t.Helper()
	return startHeraldTrusting(t, wrap, nil, name, dataDir, extra...)
}

// startHeraldTrusting is startHeraldUnder for a Herald serving HTTPS
// (--tls-cert and --tls-key in extra) when roots is not nil: its client
// trusts roots, and its address is https://.
func startHeraldTrusting(t testing.TB, wrap []string, roots *x509.CertPool, name, dataDir string, extra ...string) *herald {
	t.Helper()
	if heraldBin == "" {
		t.Fatal("the herald binary was not built (TestMain)")
	}
	errPath := filepath.Join(t.TempDir(), name+".stderr.log")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	// The tests' receivers listen on loopback.
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir, "--allow-private-destinations"}, extra...)
	argv := append(append(wrap[:len(wrap):len(wrap)], heraldBin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(childEnv(), "HERALD_ADMIN_KEY="+adminKey)
	stdout := &lineWatcher{prefix: "herald listening on ", found: make(chan string, 1)}
	cmd.Stdout = io.MultiWriter(stdout, errFile)
	cmd.Stderr = errFile
	h := &herald{t: t, name: name, cmd: cmd, errPath: errPath, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		errFile.Close()
		t.Fatalf("%s: starting %s: %v", name, heraldBin, err)
	}
	go func() {
		h.exitErr = cmd.Wait()
		errFile.Close()
		close(h.exited)
	}()
	t.Cleanup(func() {
		h.kill()
		if t.Failed() {
			h.dumpStderr()
		}
	})

	began := time.Now()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case addr := <-stdout.found:
		h.base = strings.TrimSpace(addr)
	case <-h.exited:
		h.killed = true
		t.Fatalf("%s exited before listening: %v", name, h.exitErr)
	case <-deadline.C:
		t.Fatalf("%s did not print %q within %s", name, stdout.prefix, startTimeout)
	}
	scheme, tr := "http", &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	if roots != nil {
		scheme, tr.TLSClientConfig, tr.ForceAttemptHTTP2 = "https", &tls.Config{RootCAs: roots}, true
	}
	if u, err := url.Parse(h.base); err != nil || u.Scheme != scheme || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("%s: unexpected listening address %q", name, h.base)
	}
	h.client = &http.Client{Timeout: 15 * time.Second, Transport: keyTransport{key: adminKey, next: tr}}
	t.Cleanup(h.client.CloseIdleConnections)

	ready := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/readyz", nil)
		resp, err := h.client.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-h.exited:
			h.killed = true
			t.Fatalf("%s exited before it was ready: %v", name, h.exitErr)
		case <-deadline.C:
			t.Fatalf("%s: /readyz did not answer 200 within %s", name, startTimeout)
		case <-tick.C:
		}
	}
	t.Logf("%s ready at %s in %s", name, h.base, time.Since(began).Round(time.Millisecond))
	return h
}

// kill sends SIGKILL and waits until the process has been reaped. A
// process that had already exited by itself, or that was not killed by the
// SIGKILL, fails the test. Calls after the first do nothing.
func (h *herald) kill() {
	h.t.Helper()
	if h.killed {
		return
	}
	h.killed = true
	select {
	case <-h.exited:
		h.t.Errorf("%s had exited by itself: %v", h.name, h.exitErr)
		return
	default:
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		h.t.Errorf("%s: SIGKILL: %v", h.name, err)
	}
	select {
	case <-h.exited:
	case <-time.After(exitTimeout):
		h.t.Errorf("%s: not reaped within %s of SIGKILL", h.name, exitTimeout)
		return
	}
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	var ee *exec.ExitError
	if !errors.As(h.exitErr, &ee) {
		h.t.Errorf("%s: after SIGKILL Wait returned %v, want an exit error", h.name, h.exitErr)
	} else if ws, ok := ee.Sys().(syscall.WaitStatus); ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		h.t.Errorf("%s exited by itself before the SIGKILL: %v", h.name, h.exitErr)
	}
}

// dumpStderr logs the tail of the process's stderr.
func (h *herald) dumpStderr() {
	b, err := os.ReadFile(h.errPath)
	if err != nil {
		h.t.Logf("%s: reading stderr: %v", h.name, err)
		return
	}
	if len(b) > stderrTail {
		h.t.Logf("%s: stderr (last %d of %d bytes):\n…%s", h.name, stderrTail, len(b), b[len(b)-stderrTail:])
		return
	}
	h.t.Logf("%s: stderr:\n%s", h.name, b)
}

// adminKey is the servers' HERALD_ADMIN_KEY: the tests act as the admin.
const adminKey = "process-test-admin-key-0123456789"

// keyTransport sends key as the bearer key of requests that carry no
// Authorization header.
type keyTransport struct {
	key  string
	next *http.Transport
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return k.next.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach next.
func (k keyTransport) CloseIdleConnections() { k.next.CloseIdleConnections() }

// childEnv is the test's environment without HERALD_* variables, so that a
// developer's settings cannot change the server under test.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") {
			env = append(env, kv)
		}
	}
	return env
}

// lineWatcher is an io.Writer that sends, once, the rest of the first line
// starting with prefix.
type lineWatcher struct {
	prefix string
	found  chan string

	mu   sync.Mutex
	buf  []byte
	done bool
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, w.prefix); ok {
			w.done = true
			w.buf = nil
			w.found <- rest
			break
		}
	}
	return len(p), nil
}

// do sends a JSON request and decodes a JSON answer into out (when not nil).
// It returns the status code; err is a transport or decoding error.
func (h *herald) do(ctx context.Context, method, path, contentType string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decoding %q: %w", method, path, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// createSubscription subscribes url to every event with a fast custom
// retry policy (every 200 ms, no attempt limit, 1 h TTL) and returns its id.
func (h *herald) createSubscription(t testing.TB, name, url string) string {
	t.Helper()
	return h.createSubscriptionWith(t, name, url, nil)
}

// createSubscriptionWith is createSubscription with the fields of extra
// (e.g. "event_types") added to, or replacing, those of the request.
func (h *herald) createSubscriptionWith(t testing.TB, name, url string, extra map[string]any) string {
	t.Helper()
	fields := map[string]any{
		"name": name,
		"url":  url,
		"retry_policy": map[string]any{
			"preset": "custom", "delays": []string{"200ms"}, "max_attempts": 0, "ttl": "1h",
		},
	}
	for k, v := range extra {
		fields[k] = v
	}
	body, _ := json.Marshal(fields)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sub struct {
		ID string `json:"id"`
	}
	code, err := h.do(ctx, http.MethodPost, "/v1/subscriptions", "application/json", body, &sub)
	if err != nil || code != http.StatusCreated || sub.ID == "" {
		t.Fatalf("%s: creating subscription: status %d, id %q, err %v", h.name, code, sub.ID, err)
	}
	return sub.ID
}

// cloudEvent is the part of a CloudEvent the tests write and read.
type cloudEvent struct {
	SpecVersion     string         `json:"specversion"`
	ID              string         `json:"id"`
	Source          string         `json:"source"`
	Type            string         `json:"type"`
	DataContentType string         `json:"datacontenttype,omitempty"`
	Data            map[string]any `json:"data,omitempty"`
}

// publishResult is the answer to POST /v1/events.
type publishResult struct {
	Events []struct {
		ID         string `json:"id"`
		Source     string `json:"source"`
		Duplicate  bool   `json:"duplicate"`
		Deliveries int    `json:"deliveries"`
	} `json:"events"`
}

// publish posts ids as one application/cloudevents-batch+json request. It
// returns nil only for a 202 whose answer lists every event as new with one
// delivery (the tests have exactly one subscription).
func (h *herald) publish(ctx context.Context, ids []string) error {
	evs := make([]cloudEvent, len(ids))
	for i, id := range ids {
		evs[i] = cloudEvent{
			SpecVersion: "1.0", ID: id, Source: "/load", Type: "t",
			DataContentType: "application/json", Data: map[string]any{"id": id},
		}
	}
	body, err := json.Marshal(evs)
	if err != nil {
		return err
	}
	var res publishResult
	code, err := h.do(ctx, http.MethodPost, "/v1/events", "application/cloudevents-batch+json", body, &res)
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return fmt.Errorf("publish: status %d, want 202", code)
	}
	if len(res.Events) != len(ids) {
		return fmt.Errorf("publish: answer lists %d events, want %d", len(res.Events), len(ids))
	}
	for i, e := range res.Events {
		if e.ID != ids[i] || e.Duplicate || e.Deliveries != 1 {
			return fmt.Errorf("publish: answer for %s is %+v, want id %s, not a duplicate, 1 delivery", ids[i], e, ids[i])
		}
	}
	return nil
}

// delivery is the part of a delivery resource the tests read.
type delivery struct {
	ID             string `json:"id"`
	SubscriptionID string `json:"subscription_id"`
	EventID        string `json:"event_id"`
	Status         string `json:"status"`
	Attempts       int    `json:"attempts"`
	NextAttemptAt  string `json:"next_attempt_at"`
}

// deliveries lists every delivery matching filter (subscription_id, status,
// event_id) by paging through GET /v1/deliveries. A list filtered by status
// must hold only that status.
func (h *herald) deliveries(ctx context.Context, filter url.Values) ([]delivery, error) {
	var out []delivery
	cursor := ""
	for {
		q := url.Values{"limit": {"1000"}}
		for k, v := range filter {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Data       []delivery `json:"data"`
			NextCursor string     `json:"next_cursor"`
		}
		if _, err := h.do(ctx, http.MethodGet, "/v1/deliveries?"+q.Encode(), "", nil, &page); err != nil {
			return out, err
		}
		if status := filter.Get("status"); status != "" {
			for _, d := range page.Data {
				if d.Status != status {
					return out, fmt.Errorf("delivery %s has status %q in a list filtered by status=%s", d.ID, d.Status, status)
				}
			}
		}
		out = append(out, page.Data...)
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// deliveryCount counts the subscription's deliveries with status.
func (h *herald) deliveryCount(ctx context.Context, subID, status string) (int, error) {
	ds, err := h.deliveries(ctx, url.Values{"subscription_id": {subID}, "status": {status}})
	return len(ds), err
}

// waitFor polls cond every 25 ms until it returns true or timeout passes;
// then it fails the test with what and the last message cond gave.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, msg := poll(timeout, cond); !ok {
		t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
	}
}

// poll is waitFor that returns instead of failing: whether cond became true
// within timeout, and the last message it gave.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, msg := cond()
		if ok {
			return true, msg
		}
		select {
		case <-deadline.C:
			return false, msg
		case <-tick.C:
		}
	}
}

// terminate sends SIGTERM and waits (within timeout) for the process to
// exit; it returns the exit code.
func (h *herald) terminate(timeout time.Duration) int {
	h.t.Helper()
	h.killed = true // cleanup must not SIGKILL an exited process
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		h.t.Fatalf("%s: SIGTERM: %v", h.name, err)
	}
	select {
	case <-h.exited:
	case <-time.After(timeout):
		_ = h.cmd.Process.Signal(syscall.SIGKILL)
		<-h.exited
		h.t.Fatalf("%s: did not exit within %s of SIGTERM", h.name, timeout)
	}
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	return h.cmd.ProcessState.ExitCode()
}
