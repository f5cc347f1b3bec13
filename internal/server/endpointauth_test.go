package server_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"github.com/herald-events/herald/internal/certfile"
	"github.com/herald-events/herald/internal/certfile/certtest"
	"github.com/herald-events/herald/internal/destination"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// tokenServer is an OAuth2 token endpoint on loopback: it issues tok-1,
// tok-2, … to the client id and secret it was made with (HTTP Basic,
// client credentials grant), or fails with 503 while failing is set.
type tokenServer struct {
	*httptest.Server
	mu      sync.Mutex
	issued  int
	failing bool
	forms   []string
}

func newTokenServer(t *testing.T, id, secret string) *tokenServer {
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		_ = r.ParseForm()
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.forms = append(ts.forms, r.PostForm.Encode())
		switch {
		case ts.failing:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case !ok || u != id || p != secret || r.PostForm.Get("grant_type") != "client_credentials":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		ts.issued++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":3600}`, ts.issued)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.issued
}

func (ts *tokenServer) fail(on bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.failing = on
}

// bearerCheck answers 200 to requests bearing the token accepted holds, 401
// to the others (and code, when set, to those it accepts).
type bearerCheck struct {
	mu       sync.Mutex
	accepted string
	code     int
}

func (bc *bearerCheck) accept(token string) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.accepted = token
}

func (bc *bearerCheck) answer(_ int, r *http.Request, w http.ResponseWriter) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+bc.accepted {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(max(bc.code, 200))
}

// TestOAuth2ClientCredentials: a subscription with oauth2_client_credentials
// auth gets one token for many deliveries, and another subscription with
// the same credentials shares it (batches too); when the endpoint refuses
// the old token, one new token is fetched and the attempt sent again; while
// the token server fails the attempt is auth_failed and retried, and
// delivered once it recovers. Dead letters to the dead-letter URL carry the
// token. The client secret is never in an answer nor in the server's log.
func TestOAuth2ClientCredentials(t *testing.T) {
	const secret = "cl13nt-s3cr3t-value"
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ts := newTokenServer(t, "herald", secret)
	ep := &bearerCheck{accepted: "tok-1"}
	rc := newReceiver(t, ep.answer)
	dlCheck := &bearerCheck{accepted: "tok-1"}
	dl := newReceiver(t, dlCheck.answer)
	auth := map[string]any{"type": "oauth2_client_credentials", "token_url": ts.URL + "/token", "client_id": "herald",
		"client_secret": secret, "scopes": []string{"hooks.write", "hooks.read"}, "audience": "https://api.example"}
	sub := b.subscribe(map[string]any{"name": "oauth", "url": rc.URL, "event_types": []string{"t"}, "auth": auth})
	b.subscribe(map[string]any{"name": "batched", "url": rc.URL + "/batch", "event_types": []string{"t"}, "auth": auth,
		"max_events_per_batch": 10})
	for i := range 3 {
		b.publish(fmt.Sprintf("e%d", i), "t")
	}
	eventually(t, "every delivery delivered", func() bool { return countStatus(b, "delivered") == 6 })
	if n := ts.count(); n != 1 {
		t.Fatalf("%d tokens fetched for 6 deliveries of two subscriptions with the same credentials, want 1", n)
	}
	if f := ts.forms[0]; f != "audience=https%3A%2F%2Fapi.example&grant_type=client_credentials&scope=hooks.write+hooks.read" {
		t.Fatalf("the token request's form: %s", f)
	}

	ep.accept("tok-2") // the endpoint refuses tok-1 from now on
	b.publish("e3", "t")
	eventually(t, "delivered with a new token", func() bool { return countStatus(b, "delivered") == 8 })
	if n := ts.count(); n != 2 {
		t.Fatalf("%d tokens fetched, want 2 (one refresh after the 401)", n)
	}
	for _, d := range b.deliveries(sub) {
		if as := b.attempts(d.ID); len(as) != 1 {
			t.Fatalf("delivery %s took %d attempts, want 1 (the 401 retried within it)", d.ID, len(as))
		}
	}

	ts.fail(true)
	ep.accept("tok-3")
	b.publish("e4", "t")
	var failed delivery
	eventually(t, "the attempt auth_failed", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.LastOutcome != nil && *d.LastOutcome == "auth_failed" && d.Status == "pending" {
				failed = d
				return true
			}
		}
		return false
	})
	ts.fail(false)
	b.settle()
	b.clk.Advance(failed.NextAttemptAt.Sub(b.clk.Now()))
	eventually(t, "delivered once the token server recovers", func() bool { return countStatus(b, "delivered") == 10 })

	// A dead letter goes to the dead-letter URL with the token.
	dlCheck.accept("tok-3")
	ep.mu.Lock()
	ep.code = http.StatusBadRequest // dead-letters what it accepts
	ep.mu.Unlock()
	b.subscribe(map[string]any{"name": "dl", "url": rc.URL + "/dl", "event_types": []string{"d"}, "auth": auth,
		"dead_letter_url": dl.URL, "retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 1}})
	b.publish("d1", "d")
	eventually(t, "the dead letter delivered", func() bool { return dl.count() == 1 && countStatus(b, "dead_lettered") == 1 })
	if got := dl.request(0).header.Get("Authorization"); got != "Bearer tok-3" {
		t.Fatalf("the dead letter's Authorization: %q", got)
	}

	var shown struct {
		Auth map[string]any `json:"auth"`
	}
	code, raw := b.do("GET", "/v1/subscriptions/"+sub, nil, &shown)
	if code != 200 || shown.Auth["client_secret"] != "****" || shown.Auth["client_id"] != "herald" {
		t.Fatalf("GET: %d %s", code, raw)
	}
	all := b.state()
	for where, text := range map[string]string{"the answers": all + string(raw), "the server's log": logs.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("the client secret is in %s", where)
		}
	}
}

// countStatus counts the deliveries of every subscription in status.
func countStatus(b *bundle, status string) int {
	n := 0
	for _, d := range allDeliveries(b) {
		if d.Status == status {
			n++
		}
	}
	return n
}

// TestEndpointAuthRefused: an auth that is not one is refused naming its
// field, on create and update, and nothing changes: an unknown type, a
// missing client_id, a PEM that does not parse, a key that is not the
// certificate's, fields of the other type; and on a server that guards its
// destinations, a token URL to a loopback address.
func TestEndpointAuthRefused(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	id := b.subscribe(map[string]any{"name": "a", "url": rc.URL})
	one, other := certtest.New(t, "one"), certtest.New(t, "other")
	js := func(v any) string { raw, _ := json.Marshal(v); return string(raw) }
	oauth := func(drop string, extra ...string) string {
		m := map[string]any{"type": "oauth2_client_credentials", "token_url": "https://93.184.216.34/token", "client_id": "c",
			"client_secret": "s"}
		delete(m, drop)
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return `"auth":` + js(m)
	}
	mtls := func(cert, key string) string {
		return `"auth":` + js(map[string]string{"type": "mtls", "certificate": cert, "private_key": key})
	}
	refuseMembers(t, b, id, []member{
		{"unknown type", `"auth":{"type":"basic"}`, "auth.type", `must be oauth2_client_credentials or mtls, not "basic"`},
		{"no type", `"auth":{"client_id":"c"}`, "auth.type", "is required"},
		{"not an object", `"auth":"oauth2"`, "auth", "must be an object"},
		{"unknown member", `"auth":{"type":"mtls","password":"x"}`, "auth.password", ""},
		{"missing client_id", oauth("client_id"), "auth.client_id", "is required"},
		{"missing client_secret", oauth("client_secret"), "auth.client_secret", "is required"},
		{"missing token_url", oauth("token_url"), "auth.token_url", "is required"},
		{"token_url not a URL", oauth("", "token_url", "ftp://x/token"), "auth.token_url", "http or https"},
		{"masked secret", oauth("", "client_secret", "****"), "auth.client_secret", "the secret itself"},
		{"mtls field in oauth2", oauth("", "certificate", string(one.CertPEM)), "auth.certificate", "is for type mtls"},
		{"certificate not PEM", mtls("not a pem", string(one.KeyPEM)), "auth.certificate", "is not a PEM certificate"},
		{"key as certificate", mtls(string(one.KeyPEM), string(one.KeyPEM)), "auth.certificate", "is not a PEM certificate"},
		{"key not PEM", mtls(string(one.CertPEM), "garbage"), "auth.private_key", "is not a PEM private key"},
		{"another certificate's key", mtls(string(one.CertPEM), string(other.KeyPEM)), "auth.private_key", "is not the private key of the certificate"},
		{"missing key", `"auth":` + js(map[string]string{"type": "mtls", "certificate": string(one.CertPEM)}), "auth.private_key", "is required"},
	})

	guarded := setup(t, func(c *server.Config) { c.Attempting.Destinations = destination.Policy{} })
	gid := guarded.subscribe(map[string]any{"name": "public", "url": "https://93.184.216.34/hook"})
	var cases []refusal
	for _, rt := range subscriptionRoutes(gid) {
		cases = append(cases, refusal{name: "loopback token URL", method: rt.method, path: rt.path,
			body: rt.body(`"url":"https://93.184.216.34/hook",` + oauth("", "token_url", "http://127.0.0.1:9000/token")),
			code: http.StatusUnprocessableEntity, field: "auth.token_url", detail: "loopback address"})
	}
	refuseAll(t, guarded, cases)
}

// TestMTLSAndOutboundCA: an HTTPS receiver whose certificate only the CA
// file (--outbound-ca-file, loaded by certfile.LoadPool) trusts, and which
// requires a client certificate: a subscription with mtls auth is
// delivered, presenting its certificate; one without is refused (a
// tls_error, retried) and never reaches the handler. The private key is
// shown as ****, and is not in the server's log.
func TestMTLSAndOutboundCA(t *testing.T) {
	serverPair, clientPair := certtest.New(t, "receiver"), certtest.New(t, "herald-client")
	caFile, _ := serverPair.Write(t, t.TempDir())
	pool, err := certfile.LoadPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Attempting.RootCAs = pool
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var mu sync.Mutex
	var peers []string
	rc := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		peers = append(peers, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	cert, err := tls.X509KeyPair(serverPair.CertPEM, serverPair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// TLS 1.2: the receiver refuses a client without a certificate in the
	// handshake. In TLS 1.3 the client's handshake ends first, so it
	// writes its request and then reads either the receiver's alert
	// (tls_error) or, when the receiver closed with the request unread,
	// a reset (connection_reset): both happen, by timing.
	rc.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPair.Pool,
		MaxVersion: tls.VersionTLS12}
	rc.StartTLS()
	t.Cleanup(rc.Close)

	with := b.subscribe(map[string]any{"name": "mtls", "url": rc.URL + "/with", "event_types": []string{"t"},
		"auth": map[string]string{"type": "mtls", "certificate": string(clientPair.CertPEM), "private_key": string(clientPair.KeyPEM)}})
	without := b.subscribe(map[string]any{"name": "plain", "url": rc.URL + "/without", "event_types": []string{"t"}})
	b.publish("e1", "t")
	b.waitDelivery(with, "delivered with the client certificate", func(d delivery) bool { return d.Status == "delivered" })
	d := b.waitDelivery(without, "refused without one", func(d delivery) bool { return d.LastOutcome != nil })
	if d.Status != "pending" || *d.LastOutcome != "tls_error" {
		t.Fatalf("without a client certificate: %+v %s, want pending after tls_error", d, *d.LastOutcome)
	}
	mu.Lock()
	if len(peers) != 1 || peers[0] != "herald-client" {
		t.Fatalf("the receiver saw the clients %q, want herald-client once", peers)
	}
	mu.Unlock()

	var shown struct {
		Auth map[string]any `json:"auth"`
	}
	code, raw := b.do("GET", "/v1/subscriptions/"+with, nil, &shown)
	if code != 200 || shown.Auth["private_key"] != "****" || shown.Auth["certificate"] != string(clientPair.CertPEM) {
		t.Fatalf("GET: %d %s", code, raw)
	}
	// A PATCH without auth keeps it; null removes it.
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+with, map[string]any{"name": "renamed"}, &shown); code != 200 || shown.Auth["type"] != "mtls" {
		t.Fatalf("PATCH name: %d %s", code, raw)
	}
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+with, map[string]any{"auth": nil}, nil); code != 200 || !strings.Contains(string(raw), `"auth":null`) {
		t.Fatalf("PATCH auth null: %d %s", code, raw)
	}
	keyBody := strings.Split(string(clientPair.KeyPEM), "\n")[1]
	if strings.Contains(b.state()+string(raw), keyBody) || strings.Contains(logs.String(), keyBody) {
		t.Fatal("the private key is in an answer or in the server's log")
	}
}
