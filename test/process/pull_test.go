package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pullSubscription creates a pull subscription and returns its id.
func (h *herald) pullSubscription(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"name": name, "delivery_mode": "pull"})
	var sub struct {
		ID string `json:"id"`
	}
	if code, err := h.do(ctx, http.MethodPost, "/v1/subscriptions", "application/json", body, &sub); err != nil || code != 201 {
		t.Fatalf("create pull subscription: %d %v", code, err)
	}
	return sub.ID
}

// consumerCall posts a consumer's call and decodes the answer.
func (h *herald) consumerCall(t *testing.T, subID, action string, in, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body, _ := json.Marshal(in)
	if code, err := h.do(ctx, http.MethodPost, "/v1/subscriptions/"+subID+"/"+action, "application/json", body, out); err != nil || code != 200 {
		t.Fatalf("%s: %s: %d %v", h.name, action, code, err)
	}
}

// TestLockSurvivesSIGKILL: a consumer receives an event with a lock; the
// server is SIGKILLed and restarted on the same data directory. The lock
// still holds (another receive gets nothing), and the consumer
// acknowledges with its token.
func TestLockSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	dataDir := t.TempDir()
	h1 := startHerald(t, "herald-1", dataDir, serveFlags...)
	sub := h1.pullSubscription(t, "pull")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h1.publishTolerant(ctx, []string{"locked-1"}); err != nil {
		t.Fatal(err)
	}
	type item struct {
		LockToken  string `json:"lock_token"`
		DeliveryID string `json:"delivery_id"`
	}
	var got struct{ Data []item }
	h1.consumerCall(t, sub, "receive", map[string]any{"lock_duration": "300s"}, &got)
	if len(got.Data) != 1 {
		t.Fatalf("receive got %d, want 1", len(got.Data))
	}
	h1.kill()

	h2 := startHerald(t, "herald-2", dataDir, serveFlags...)
	var again struct{ Data []item }
	h2.consumerCall(t, sub, "receive", map[string]any{}, &again)
	if len(again.Data) != 0 {
		t.Fatalf("after the restart a second receive got %+v: the lock did not survive", again.Data)
	}
	var ack struct {
		Succeeded []string `json:"succeeded"`
		Failed    []any    `json:"failed"`
	}
	h2.consumerCall(t, sub, "acknowledge", map[string]any{"lock_tokens": []string{got.Data[0].LockToken}}, &ack)
	if len(ack.Succeeded) != 1 || len(ack.Failed) != 0 {
		t.Fatalf("acknowledge after the restart: %+v", ack)
	}
	if n, err := h2.deliveryCount(ctx, sub, "delivered"); err != nil || n != 1 {
		t.Fatalf("delivered: %d, %v", n, err)
	}
}

// TestHeraldPullCommand: herald pull, with HERALD_API_KEY, receives,
// prints and acknowledges a pull subscription's events.
func TestHeraldPullCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	h := startHerald(t, "herald", t.TempDir(), serveFlags...)
	sub := h.pullSubscription(t, "pull")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := h.publishTolerant(ctx, []string{"p-1", "p-2", "p-3"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, heraldBin, "pull", sub, "--api", h.base, "--count", "3", "--max-wait", "5s")
	cmd.Env = append(childEnv(), "HERALD_API_KEY="+adminKey)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald pull: %v\nstderr: %s", err, errOut.String())
	}
	for _, id := range []string{"id=p-1", "id=p-2", "id=p-3"} {
		if !strings.Contains(out.String(), id) {
			t.Errorf("herald pull's output lacks %s:\n%s", id, out.String())
		}
	}
	if n, err := h.deliveryCount(ctx, sub, "delivered"); err != nil || n != 3 {
		t.Fatalf("acknowledged: %d, %v; want 3\n%s", n, err, out.String())
	}
	// Without a key it says how to get one.
	cmd = exec.CommandContext(ctx, heraldBin, "pull", sub, "--api", h.base, "--data", t.TempDir(), "--count", "1")
	cmd.Env = childEnv()
	errOut.Reset()
	cmd.Stderr = &errOut
	if err := cmd.Run(); err == nil || !strings.Contains(errOut.String(), "HERALD_API_KEY") {
		t.Fatalf("herald pull without a key: %v, %q", err, errOut.String())
	}
}

// TestHeraldFilterTestCommand: herald filter test says whether an event
// would go to a subscription (exit 0) or which filter refused it (exit 1).
func TestHeraldFilterTestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: builds and runs the herald binary")
	}
	h := startHerald(t, "herald", t.TempDir(), serveFlags...)
	rcv := newReceiver(t, 0, false)
	sub := h.createSubscriptionWith(t, "filtered", rcv.URL(), map[string]any{
		"advanced_filters": []map[string]any{{"operator_type": "NumberGreaterThan", "key": "data.amount", "value": 100}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		amount int
		code   int
		says   string
	}{{150, 0, "matches"}, {50, 1, "does not match (advanced_filters[0])"}} {
		ev := `{"specversion":"1.0","id":"f1","source":"/s","type":"t","data":{"amount":` + strconv.Itoa(c.amount) + `}}`
		cmd := exec.CommandContext(ctx, heraldBin, "filter", "test", sub, "--api", h.base)
		cmd.Env = append(childEnv(), "HERALD_API_KEY="+adminKey)
		cmd.Stdin = strings.NewReader(ev)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(out.String(), c.says) {
			t.Fatalf("amount %d: exit %d, %q %q; want exit %d saying %q", c.amount, code, out.String(), errOut.String(), c.code, c.says)
		}
	}
}
