package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/server"
)

// TestSecretsNeverShown: a subscription whose URL and dead-letter URL
// carry passwords and which has a secret header, pushing to a port nothing
// listens on, and another whose CloudEvents handshake goes there: its
// delivery is dead-lettered after a refused connection, its dead letter's
// push is refused too, both endpoints are disabled and the handshake
// fails. Neither a password nor the secret header's value is in what
// Herald shows of it: the attempt log, the subscriptions, endpoints and
// deliveries, the operational events, a problem detail about such a URL,
// the process's log.
func TestSecretsNeverShown(t *testing.T) {
	const pw, dlPW, vPW, secret = "SuperSecretPw1", "DeadLetterPw2", "ValidationPw3", "s3cr3t-h34der-v4lue"
	logs := &logBuffer{}
	hcfg := health.DefaultConfig()
	hcfg.ProbationAfter, hcfg.DisableConsecutive = 0, 1
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server's log:\n%s", logs.String())
		}
	})
	b := setup(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Scheduling.Health = hcfg
	})
	ops := b.opsReceiver("herald.endpoint.disabled", "herald.delivery.dead_lettered")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens on its address any more
	addr := closed.Listener.Addr().String()
	sub := b.subscribe(map[string]any{"name": "pw", "url": "http://usr:" + pw + "@" + addr + "/hook", "event_types": []string{"t"},
		"dead_letter_url": "http://dl:" + dlPW + "@" + addr + "/dl", "secret_headers": map[string]string{"X-Key": secret},
		"retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 1}})
	vsub := b.subscribe(map[string]any{"name": "v", "url": "http://v:" + vPW + "@" + addr + "/v", "event_types": []string{"t"},
		"validation": "cloudevents"})
	code, problem := b.do("POST", "/v1/subscriptions", map[string]any{"name": "bad", "url": "http://usr:" + pw + "@" + addr + ":x/"}, nil)
	if code != http.StatusBadRequest {
		t.Fatalf("a URL with a bad port: %d %s", code, problem)
	}

	b.publish("e1", "t")
	eventually(t, "dead-lettered, and the dead letter's push refused", func() bool {
		var dead, refused bool
		for _, d := range b.deliveries(sub) {
			dead = dead || d.Status == "dead_lettered"
			refused = refused || d.Status == "pending" && len(b.attempts(d.ID)) > 0
		}
		return dead && refused
	})
	eventually(t, "a dead-letter event and the endpoints disabled", func() bool {
		types := map[string]int{}
		for _, ev := range opsEvents(t, ops) {
			types[ev["type"].(string)]++
		}
		return types["herald.delivery.dead_lettered"] == 1 && types["herald.endpoint.disabled"] == 2
	})
	b.settle()
	b.clk.Advance(time.Second) // the validator's round
	eventually(t, "the handshake failed", func() bool { return subStateOf(b, vsub).ValidationError != nil })

	shown := map[string]string{"the problem": string(problem)}
	var redacted bool
	for _, d := range allDeliveries(b) {
		_, raw := b.do("GET", "/v1/deliveries/"+d.ID+"/attempts?limit=1000", nil, nil)
		shown["the attempts of "+d.ID] = string(raw)
		redacted = redacted || strings.Contains(string(raw), `usr:xxxxx@`)
	}
	for _, path := range []string{"/v1/subscriptions", "/v1/endpoints", "/v1/deliveries?limit=1000",
		"/v1/deliveries?status=dead_lettered", "/v1/subscriptions/" + vsub} {
		_, raw := b.do("GET", path, nil, nil)
		shown[path] = string(raw)
	}
	for i := 0; i < ops.count(); i++ {
		shown["operational event "+string(rune('0'+i))] = string(ops.request(i).body)
	}
	b.settle()
	shown["the log"] = logs.String()
	for what, text := range shown {
		for _, s := range []string{pw, dlPW, vPW, secret} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
	}
	if !redacted {
		t.Errorf("no attempt shows the URL with its password redacted: %v", shown)
	}
}
