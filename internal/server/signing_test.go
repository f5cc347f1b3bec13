package server_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/server"
)

// Secrets the tests give subscriptions: "whsec_" and the base64 of 32 bytes.
const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="
	secretB = "whsec_c2Vjb25kIHNlY3JldCBvZiB0aGlydHktdHdvIGJ5dGVzISE="
)

// secretAnswer is the answer of the secret routes.
type secretAnswer struct {
	Algorithm string `json:"algorithm"`
	Secret    string `json:"secret"`
	PublicKey string `json:"public_key"`
	Previous  []struct {
		Secret    string    `json:"secret"`
		PublicKey string    `json:"public_key"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"previous"`
}

// secretOf reads a subscription's signing secret (its secret route).
func secretOf(b *bundle, id string) secretAnswer {
	b.t.Helper()
	var out secretAnswer
	if code, raw := b.do("GET", "/v1/subscriptions/"+id+"/secret", nil, &out); code != http.StatusOK {
		b.t.Fatalf("GET secret: %d %s", code, raw)
	}
	return out
}

// verifyWith checks a push with the Standard Webhooks reference library
// keyed with secret; the timestamp is checked against the fake clock by
// the caller (the library checks it against the wall clock).
func verifyWith(t *testing.T, secret string, got received) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.VerifyIgnoringTimestamp(got.body, got.header)
}

// TestSignatureStandardWebhooksLibrary: pushes verify with the Standard
// Webhooks reference library unchanged, timestamp tolerance included, with
// a given secret and with the one Herald made (read from the secret route).
func TestSignatureStandardWebhooksLibrary(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Clock = clock.NewFake(time.Now()) }) // Verify checks the wall clock
	rc := newReceiver(t, status(http.StatusOK))
	given := b.subscribe(map[string]any{"name": "given", "url": rc.URL + "/given", "signing": map[string]any{"secret": secretA}})
	made := b.subscribe(map[string]any{"name": "made", "url": rc.URL + "/made"})
	madeSecret := secretOf(b, made)
	if madeSecret.Algorithm != "hmac-sha256" || !strings.HasPrefix(madeSecret.Secret, "whsec_") || len(madeSecret.Previous) != 0 {
		t.Fatalf("secret of a subscription made without one: %+v", madeSecret)
	}
	if got := secretOf(b, given); got.Secret != secretA {
		t.Fatalf("given secret reads back as %q", got.Secret)
	}
	b.publish("e1", "invoice.paid")
	eventually(t, "both pushes", func() bool { return rc.count() == 2 })
	for i := range 2 {
		got := rc.request(i)
		secret := secretA
		if got.header.Get("Herald-Subscription") == made {
			secret = madeSecret.Secret
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(got.body, got.header); err != nil {
			t.Errorf("push %d (%s): the reference library says %v; headers %v", i, got.header.Get("Herald-Subscription"), err, got.header)
		}
		if sig := got.header.Get("Webhook-Signature"); !strings.HasPrefix(sig, "v1,") || strings.Contains(sig, " ") {
			t.Errorf("push %d: webhook-signature %q; want one v1 signature", i, sig)
		}
		other := secretB
		if err := verifyWith(t, other, got); err == nil {
			t.Errorf("push %d verifies with another secret", i)
		}
	}
}

// TestSignatureEd25519 verifies a push of an ed25519 subscription with the
// standard library and the public key of the secret route.
func TestSignatureEd25519(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	id := b.subscribe(map[string]any{"name": "ed", "url": rc.URL, "signing": map[string]any{"algorithm": "ed25519"}})
	sec := secretOf(b, id)
	if sec.Algorithm != "ed25519" || sec.Secret != "" || !strings.HasPrefix(sec.PublicKey, "whpk_") {
		t.Fatalf("secret of an ed25519 subscription: %+v", sec)
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sec.PublicKey, "whpk_"))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %v", sec.PublicKey, err)
	}
	b.publish("e1", "t")
	eventually(t, "the push", func() bool { return rc.count() == 1 })
	got := rc.request(0)
	h := got.header
	if ts := h.Get("Webhook-Timestamp"); ts != strconv.FormatInt(b.clk.Now().Unix(), 10) {
		t.Errorf("webhook-timestamp %q; want the fake clock's %d", ts, b.clk.Now().Unix())
	}
	v, sig, ok := strings.Cut(h.Get("Webhook-Signature"), ",")
	if !ok || v != "v1a" {
		t.Fatalf("webhook-signature %q; want v1a,…", h.Get("Webhook-Signature"))
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	content := h.Get("Webhook-Id") + "." + h.Get("Webhook-Timestamp") + "." + string(got.body)
	if !ed25519.Verify(pub, []byte(content), raw) {
		t.Fatalf("the ed25519 signature does not verify")
	}
	if ed25519.Verify(pub, []byte(content+" "), raw) {
		t.Fatalf("the signature verifies other content")
	}
	// A secret cannot be given for ed25519, at creation or rotation.
	refuseAll(t, b, []refusal{
		{name: "secret for ed25519", method: "POST", path: "/v1/subscriptions",
			body: `{"name":"x","url":"https://example.com/","signing":{"algorithm":"ed25519","secret":"` + secretA + `"}}`, field: "signing.secret", detail: "only for hmac-sha256"},
		{name: "rotate ed25519 with a secret", method: "POST", path: "/v1/subscriptions/" + id + "/secret/rotate",
			body: `{"secret":"` + secretA + `"}`, field: "secret", detail: "only for hmac-sha256"},
	})
	var rot secretAnswer
	if code, raw := b.do("POST", "/v1/subscriptions/"+id+"/secret/rotate", nil, &rot); code != http.StatusOK ||
		rot.PublicKey == sec.PublicKey || len(rot.Previous) != 1 || rot.Previous[0].PublicKey != sec.PublicKey {
		t.Fatalf("rotate: %d %s", code, raw)
	}
}

// TestSignatureRotation: during the grace period every push is signed with
// the new and the old secret (both verify with the reference library);
// after it, with the new one only.
func TestSignatureRotation(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	id := b.subscribe(map[string]any{"name": "r", "url": rc.URL, "signing": map[string]any{"secret": secretA}})
	var rot secretAnswer
	if code, raw := b.do("POST", "/v1/subscriptions/"+id+"/secret/rotate", map[string]any{"grace": "1h", "secret": secretB}, &rot); code != http.StatusOK {
		t.Fatalf("rotate: %d %s", code, raw)
	}
	if rot.Secret != secretB || len(rot.Previous) != 1 || rot.Previous[0].Secret != secretA || !rot.Previous[0].ExpiresAt.Equal(b.clk.Now().Add(time.Hour)) {
		t.Fatalf("after the rotation: %+v", rot)
	}
	b.publish("e1", "t")
	eventually(t, "the first push", func() bool { return rc.count() == 1 })
	during := rc.request(0)
	if n := len(strings.Fields(during.header.Get("Webhook-Signature"))); n != 2 {
		t.Errorf("during the grace period: %d signatures (%q); want 2", n, during.header.Get("Webhook-Signature"))
	}
	for _, s := range []string{secretA, secretB} {
		if err := verifyWith(t, s, during); err != nil {
			t.Errorf("during the grace period, %s: %v", s[:12], err)
		}
	}

	// The first push's outcome is written and every loop asleep before the
	// clock moves: a loop still in its round would arm its timer after the
	// move and sleep past it (see bundle.asleep).
	b.settle()
	b.clk.Advance(time.Hour)
	if sec := secretOf(b, id); sec.Secret != secretB || len(sec.Previous) != 0 {
		t.Fatalf("secret after the grace period: %+v", sec)
	}
	b.publish("e2", "t")
	eventually(t, "the second push", func() bool { return rc.count() == 2 })
	after := rc.request(1)
	if sig := after.header.Get("Webhook-Signature"); len(strings.Fields(sig)) != 1 {
		t.Errorf("after the grace period: %q; want one signature", sig)
	}
	if err := verifyWith(t, secretB, after); err != nil {
		t.Errorf("after the grace period, the new secret: %v", err)
	}
	if err := verifyWith(t, secretA, after); err == nil {
		t.Errorf("after the grace period, the old secret still verifies")
	}
	if ts := after.header.Get("Webhook-Timestamp"); ts != strconv.FormatInt(b.clk.Now().Unix(), 10) {
		t.Errorf("webhook-timestamp %q; want the fake clock's %d", ts, b.clk.Now().Unix())
	}

	// grace 0s drops the old key at once; no body rotates with a made secret.
	if code, raw := b.do("POST", "/v1/subscriptions/"+id+"/secret/rotate", map[string]any{"grace": "0s"}, &rot); code != http.StatusOK ||
		rot.Secret == secretB || len(rot.Previous) != 0 {
		t.Fatalf("rotate with grace 0s: %d %s", code, raw)
	}
	if code, raw := b.do("POST", "/v1/subscriptions/"+id+"/secret/rotate", nil, &rot); code != http.StatusOK || len(rot.Previous) != 1 ||
		!rot.Previous[0].ExpiresAt.Equal(b.clk.Now().Add(24*time.Hour)) {
		t.Fatalf("rotate without a body: %d %s", code, raw)
	}
}

// TestSecretHeaders: secret headers are sent with every push and stored,
// answers show only their names, and neither they nor the signing secret
// reach the log.
func TestSecretHeaders(t *testing.T) {
	logs := &logBuffer{}
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	rc := newReceiver(t, status(http.StatusOK))
	var created map[string]any
	code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "s", "url": rc.URL,
		"headers": map[string]string{"X-Plain": "plain"}, "secret_headers": map[string]string{"X-Token": "t0ken-value"},
		"signing": map[string]any{"secret": secretA}}, &created)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, raw)
	}
	id := created["id"].(string)
	answers := []string{string(raw)}
	_, raw = b.do("GET", "/v1/subscriptions/"+id, nil, nil)
	answers = append(answers, string(raw))
	_, raw = b.do("GET", "/v1/subscriptions", nil, nil)
	answers = append(answers, string(raw))
	for _, a := range answers {
		if !strings.Contains(a, `"secret_headers":{"X-Token":"****"}`) || strings.Contains(a, "t0ken-value") ||
			strings.Contains(a, "MfKQ9r8") || strings.Contains(a, `"signing"`) {
			t.Errorf("answer shows a secret or hides the secret header's name: %s", a)
		}
	}
	b.publish("e1", "t")
	eventually(t, "the push", func() bool { return rc.count() == 1 })
	if h := rc.request(0).header; h.Get("X-Token") != "t0ken-value" || h.Get("X-Plain") != "plain" {
		t.Errorf("push headers: %v", h)
	}
	if err := verifyWith(t, secretA, rc.request(0)); err != nil {
		t.Errorf("push with secret headers: %v", err)
	}
	// PATCH replaces them; the stored value is what is sent next.
	code, raw = b.do("PATCH", "/v1/subscriptions/"+id, map[string]any{"secret_headers": map[string]string{"X-Other": "other-secret"}}, nil)
	if code != http.StatusOK || !strings.Contains(string(raw), `"secret_headers":{"X-Other":"****"}`) || strings.Contains(string(raw), "other-secret") {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	b.publish("e2", "t")
	eventually(t, "the second push", func() bool { return rc.count() == 2 })
	if h := rc.request(1).header; h.Get("X-Other") != "other-secret" || h.Get("X-Token") != "" || h.Get("X-Plain") != "plain" {
		t.Errorf("push headers after PATCH: %v", h)
	}
	b.settle()
	for _, s := range []string{"t0ken-value", "other-secret", "MfKQ9r8", rc.request(0).header.Get("Webhook-Signature")} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log shows %q:\n%s", s, logs)
		}
	}
	if !strings.Contains(logs.String(), id) {
		t.Errorf("the log does not mention the subscription (is it captured?):\n%s", logs)
	}
}

// TestSigningInput: bad secret headers, signing and rotation inputs are
// refused naming the field.
func TestSigningInput(t *testing.T) {
	b := setup(t)
	id := b.subscribe(map[string]any{"name": "base", "url": "https://example.com/hook", "headers": map[string]string{"X-Plain": "p"}})
	nineJSON := nineHeaders()
	refuseMembers(t, b, id, []member{
		{"bad name", `"secret_headers":{"X Y":"v"}`, "secret_headers.X Y", "may hold only"},
		{"reserved name", `"secret_headers":{"Webhook-Signature":"v"}`, "secret_headers.Webhook-Signature", "set by Herald"},
		{"control character", `"secret_headers":{"X-T":"a\u0001b"}`, "secret_headers.X-T", "control characters"},
		{"space at the end", `"secret_headers":{"X-T":"v "}`, "secret_headers.X-T", "must not begin or end"},
		{"repeated name", `"secret_headers":{"X-T":"a","x-t":"b"}`, "secret_headers.x-t", "case-insensitive"},
		{"in both maps", `"headers":{"X-Dup":"a"},"secret_headers":{"x-dup":"b"}`, "secret_headers.x-dup", "also in headers"},
		{"eleven in all", `"headers":{"X-One":"a"},"secret_headers":` + strings.Replace(nineJSON, "{", `{"X-Ten":"v",`, 1), "secret_headers", "at most 10 headers in all"},
		{"not an object", `"secret_headers":[]`, "secret_headers", "must be an object"},
	})
	// PATCH checks against the stored headers.
	refuseAll(t, b, []refusal{
		{name: "secret header named like a stored header", method: "PATCH", path: "/v1/subscriptions/" + id,
			body: `{"secret_headers":{"x-plain":"s"}}`, field: "secret_headers.x-plain", detail: "also in headers"},
		{name: "ten secret headers beside a stored header", method: "PATCH", path: "/v1/subscriptions/" + id,
			body: `{"secret_headers":` + strings.Replace(nineJSON, "{", `{"X-Ten":"v",`, 1) + `}`, field: "secret_headers", detail: "at most 10 headers in all"},
		{name: "signing on PATCH", method: "PATCH", path: "/v1/subscriptions/" + id,
			body: `{"signing":{"secret":"` + secretA + `"}}`, field: "signing", detail: "rotate"},
	})
	create := func(name, signing, field, detail string) refusal {
		return refusal{name: name, method: "POST", path: "/v1/subscriptions",
			body: `{"name":"x","url":"https://example.com/","signing":` + signing + `}`, field: field, detail: detail}
	}
	rotate := func(name, body, field, detail string) refusal {
		return refusal{name: name, method: "POST", path: "/v1/subscriptions/" + id + "/secret/rotate", body: body, field: field, detail: detail}
	}
	refuseAll(t, b, []refusal{
		create("unknown algorithm", `{"algorithm":"rsa"}`, "signing.algorithm", "hmac-sha256 or ed25519"),
		create("no prefix", `{"secret":"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "signing.secret", "whsec_"),
		create("not base64", `{"secret":"whsec_!!!!"}`, "signing.secret", "base64"),
		create("too short", `{"secret":"whsec_c2hvcnQ="}`, "signing.secret", "24 to 64 bytes, got 5"),
		create("too long", `{"secret":"whsec_`+base64.StdEncoding.EncodeToString(make([]byte, 65))+`"}`, "signing.secret", "24 to 64 bytes, got 65"),
		create("unknown member", `{"key":"x"}`, "signing.key", "unknown field"),
		rotate("grace not a duration", `{"grace":"tomorrow"}`, "grace", `"tomorrow" is not a duration such as "30s"`),
		rotate("negative grace", `{"grace":"-1s"}`, "grace", "between 0s and 168h"),
		rotate("grace over 7 days", `{"grace":"169h"}`, "grace", "between 0s and 168h"),
		rotate("bad secret", `{"secret":"whsec_c2hvcnQ="}`, "secret", "24 to 64 bytes"),
		rotate("unknown member", `{"algorithm":"ed25519"}`, "algorithm", "unknown field"),
	})
	for _, path := range []string{"/v1/subscriptions/sub_missing/secret", "/v1/subscriptions/sub_missing/secret/rotate"} {
		method := "GET"
		if strings.HasSuffix(path, "rotate") {
			method = "POST"
		}
		if code, raw := b.do(method, path, nil, nil); code != http.StatusNotFound {
			t.Errorf("%s %s: %d %s; want 404", method, path, code, raw)
		}
	}
	// The limits themselves are accepted: 10 headers in all, 24- and 64-byte secrets, 7 days.
	ok := []struct{ method, path, body string }{
		{"PATCH", "/v1/subscriptions/" + id, `{"secret_headers":` + nineJSON + `}`},
		{"POST", "/v1/subscriptions", `{"name":"s24","url":"https://example.com/","signing":{"secret":"whsec_` + base64.StdEncoding.EncodeToString(make([]byte, 24)) + `"}}`},
		{"POST", "/v1/subscriptions", `{"name":"s64","url":"https://example.com/","signing":{"algorithm":"hmac-sha256","secret":"whsec_` + base64.RawStdEncoding.EncodeToString(make([]byte, 64)) + `"}}`},
		{"POST", "/v1/subscriptions/" + id + "/secret/rotate", `{"grace":"168h"}`},
	}
	for _, c := range ok {
		if code, raw := b.do(c.method, c.path, []byte(c.body), nil); code >= 300 {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, code, raw)
		}
	}
}

// TestURLUserinfoIsBasicAuth: a URL with user information is pushed to
// with HTTP basic authentication from it (as net/http's client does), and
// an Authorization header of the subscription's wins over it.
func TestURLUserinfoIsBasicAuth(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	u := strings.Replace(rc.URL, "http://", "http://hook-user:p%40ss@", 1)
	b.subscribe(map[string]any{"name": "userinfo", "url": u, "event_types": []string{"t"}})
	rc2 := newReceiver(t, status(http.StatusOK))
	b.subscribe(map[string]any{"name": "header", "url": strings.Replace(rc2.URL, "http://", "http://x:y@", 1),
		"event_types": []string{"t"}, "secret_headers": map[string]string{"Authorization": "Bearer own"}})
	b.publish("e1", "t")
	eventually(t, "both pushes", func() bool { return rc.count() == 1 && rc2.count() == 1 })
	req := &http.Request{Header: rc.request(0).header}
	if user, pass, ok := req.BasicAuth(); !ok || user != "hook-user" || pass != "p@ss" {
		t.Errorf("basic auth from the URL: %q %q %v (header %q)", user, pass, ok, req.Header.Get("Authorization"))
	}
	if got := rc2.request(0).header.Get("Authorization"); got != "Bearer own" {
		t.Errorf("the subscription's Authorization header: %q", got)
	}
}
