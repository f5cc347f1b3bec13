package process

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// cliWalk is one walk through the CLI's resource verbs: the built herald
// run as a client of a herald server process, with the API key it uses.
type cliWalk struct {
	t   *testing.T
	h   *herald
	key string
}

// run runs `herald args...` with HERALD_API set to the server and
// HERALD_API_KEY to w.key (nothing else of the test's HERALD_*), and
// returns its exit status, stdout and stderr.
func (w *cliWalk) run(args ...string) (int, string, string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	cmd.Env = append(childEnv(), "HERALD_API="+w.h.base, "HERALD_API_KEY="+w.key)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("herald %q: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

// ok runs herald args and fails the test unless it exits 0 with nothing
// on stderr; it returns stdout.
func (w *cliWalk) ok(args ...string) string {
	w.t.Helper()
	code, out, errOut := w.run(args...)
	if code != 0 || errOut != "" {
		w.t.Fatalf("herald %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
	}
	return out
}

// json runs herald args -o json and decodes its stdout into out.
func (w *cliWalk) json(out any, args ...string) {
	w.t.Helper()
	stdout := w.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		w.t.Fatalf("herald %q -o json: %v\n%s", args, err, stdout)
	}
}

// fails runs herald args and fails the test unless it exits code with
// nothing on stdout and every one of want on stderr's first line.
func (w *cliWalk) fails(code int, want []string, args ...string) {
	w.t.Helper()
	got, out, errOut := w.run(args...)
	first, _, _ := strings.Cut(errOut, "\n")
	for _, s := range want {
		if !strings.Contains(first, s) {
			got = -1
		}
	}
	if got != code || out != "" {
		w.t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want exit %d naming %q", args, got, out, errOut, code, want)
	}
}

// table runs herald args (table output) and returns its rows, each cell by
// its column's header: the header's columns start where its words do, at
// least two spaces apart.
func (w *cliWalk) table(args ...string) []map[string]string {
	w.t.Helper()
	lines := strings.Split(strings.TrimRight(w.ok(args...), "\n"), "\n")
	header := []rune(lines[0])
	var starts []int
	var names []string
	for _, m := range regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(lines[0], -1) {
		starts = append(starts, len([]rune(lines[0][:m[0]])))
		names = append(names, lines[0][m[0]:m[1]])
	}
	if len(starts) == 0 {
		w.t.Fatalf("herald %q: no header: %q", args, header)
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		r, row := []rune(line), map[string]string{}
		for i, s := range starts {
			end := len(r)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(r))
			}
			row[names[i]] = strings.TrimSpace(string(r[min(s, len(r)):end]))
		}
		rows = append(rows, row)
	}
	return rows
}

// flakyReceiver is a webhook receiver on 127.0.0.1 that answers 503 until
// healthy is set, then 200.
type flakyReceiver struct {
	url     string
	healthy atomic.Bool
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !r.healthy.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

// delivery is the part of a delivery the walk reads.
type cliDelivery struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	EventID  string `json:"event_id"`
}

// TestCLIWalkThrough runs the built herald's resource verbs against a
// herald server process (on PostgreSQL with HERALD_TEST_STORE=postgres):
// an account and its key made with the admin key, then, with that key, a
// subscription to a receiver that fails and then succeeds, published
// events, their deliveries and attempts, a dead letter redriven, a
// redeliver, a recover followed with jobs get, an endpoint frozen and
// enabled, a test event, problems and usage errors, and the deletes. JSON
// output is decoded and checked, table output read by its columns.
func TestCLIWalkThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	var extra []string
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		extra = []string{"--store", pgtest.SchemaURL(t)}
	}
	h := startHerald(t, "herald", filepath.Join(t.TempDir(), "data"), extra...)
	w := &cliWalk{t: t, h: h, key: adminKey}
	account, key := w.accountAndKey()
	w.key = key
	recv := newFlakyReceiver(t)
	sub := w.subscription(recv)
	dlv := w.deadLetterRedriven(sub, recv)
	w.redeliverAndRecover(sub, dlv, recv)
	w.endpointsAndTest(sub, recv)
	w.refusals(sub)
	queue := w.queue()
	w.deletes(account, sub, queue)
}

// accountAndKey makes an account and an account key in it with the admin
// key, and checks both lists.
func (w *cliWalk) accountAndKey() (account, key string) {
	var acc struct{ ID, Name string }
	w.json(&acc, "accounts", "create", "--name", "acme")
	if !strings.HasPrefix(acc.ID, "acc_") || acc.Name != "acme" {
		w.t.Fatalf("accounts create: %+v", acc)
	}
	found := false
	for _, row := range w.table("accounts", "list") {
		found = found || row["ID"] == acc.ID && row["NAME"] == "acme" && row["FAILURE POLICY"] == "retry"
	}
	if !found {
		w.t.Errorf("accounts list has no row ID %s NAME acme FAILURE POLICY retry", acc.ID)
	}
	var k struct {
		ID, Key, Role string
		AccountID     string `json:"account_id"`
	}
	w.json(&k, "keys", "create", "--account", acc.ID, "--role", "account", "--name", "ops")
	if k.AccountID != acc.ID || k.Role != "account" || !strings.HasPrefix(k.Key, "hk_") {
		w.t.Fatalf("keys create: %+v", k)
	}
	rows := w.table("keys", "list", "--account", acc.ID)
	if len(rows) != 1 || rows[0]["ID"] != k.ID || rows[0]["ROLE"] != "account" || rows[0]["NAME"] != "ops" {
		w.t.Errorf("keys list --account %s: %v, want the one key %s", acc.ID, rows, k.ID)
	}
	return acc.ID, k.Key
}

// subscription creates a subscription to recv from --file with flags over
// it (two attempts, 200 ms apart, then a dead letter) and lists it.
func (w *cliWalk) subscription(recv *flakyReceiver) string {
	file := filepath.Join(w.t.TempDir(), "sub.json")
	body := `{"name": "from-file", "retry_policy": {"preset": "custom", "delays": ["200ms"], "max_attempts": 2, "ttl": "1h"}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
	var sub struct {
		ID, Name, URL string
		EventTypes    []string `json:"event_types"`
		RetryPolicy   struct {
			MaxAttempts int `json:"max_attempts"`
		} `json:"retry_policy"`
	}
	w.json(&sub, "subscriptions", "create", "--file", file, "--name", "orders", "--url", recv.url,
		"--event-type", "order.created", "--event-type", "order.paid")
	if sub.Name != "orders" || sub.URL != recv.url || strings.Join(sub.EventTypes, ",") != "order.created,order.paid" || sub.RetryPolicy.MaxAttempts != 2 {
		w.t.Fatalf("subscriptions create: %+v; want the flags over the file", sub)
	}
	rows := w.table("subscriptions", "list")
	if len(rows) != 1 || rows[0]["ID"] != sub.ID || rows[0]["NAME"] != "orders" || rows[0]["MODE"] != "push" ||
		rows[0]["STATE"] != "active" || rows[0]["EVENT TYPES"] != "order.created,order.paid" {
		w.t.Errorf("subscriptions list: %v", rows)
	}
	var page struct {
		Data []struct{ ID string } `json:"data"`
	}
	w.json(&page, "subscriptions", "list", "--name", "orders")
	if len(page.Data) != 1 || page.Data[0].ID != sub.ID {
		w.t.Errorf("subscriptions list --name orders -o json: %+v", page)
	}
	return sub.ID
}

// publish publishes an order.created event with id and returns its
// delivery, once it is in status.
func (w *cliWalk) publish(sub, id, status string) cliDelivery {
	var res struct {
		Events []struct {
			ID         string `json:"id"`
			Deliveries int    `json:"deliveries"`
		} `json:"events"`
	}
	w.json(&res, "events", "publish", "--type", "order.created", "--source", "/shop", "--id", id, "--payload", `{"order":"`+id+`"}`)
	if len(res.Events) != 1 || res.Events[0].ID != id || res.Events[0].Deliveries != 1 {
		w.t.Fatalf("events publish: %+v", res)
	}
	var d cliDelivery
	waitFor(w.t, 20*time.Second, "the delivery of "+id+" "+status, func() (bool, string) {
		var page struct{ Data []cliDelivery }
		w.json(&page, "deliveries", "list", "--subscription", sub, "--event-id", id)
		if len(page.Data) != 1 {
			return false, "no delivery"
		}
		d = page.Data[0]
		return d.Status == status, d.Status
	})
	return d
}

// waitDelivered waits until the delivery is delivered, after attempts.
func (w *cliWalk) waitDelivered(id string, attempts int) {
	waitFor(w.t, 20*time.Second, id+" delivered", func() (bool, string) {
		var d cliDelivery
		w.json(&d, "deliveries", "get", id)
		return d.Status == "delivered" && d.Attempts == attempts, d.Status
	})
}

// attemptCodes returns the status codes of the delivery's attempts, from
// the table, and checks them against -o json with --limit 1 --all.
func (w *cliWalk) attemptCodes(id string) string {
	var codes []string
	for _, row := range w.table("deliveries", "attempts", id) {
		codes = append(codes, row["CODE"])
	}
	var page struct {
		Data []struct {
			StatusCode int `json:"status_code"`
		} `json:"data"`
		NextCursor string `json:"next_cursor"`
	}
	w.json(&page, "deliveries", "attempts", id, "--limit", "1", "--all")
	if len(page.Data) != len(codes) || page.NextCursor != "" {
		w.t.Errorf("deliveries attempts --limit 1 --all: %+v; the table has %v", page, codes)
	}
	return strings.Join(codes, " ")
}

// deadLetterRedriven publishes while recv fails: the delivery is
// dead-lettered after two 503s, listed as a dead letter, and redriven once
// recv is healthy.
func (w *cliWalk) deadLetterRedriven(sub string, recv *flakyReceiver) string {
	d := w.publish(sub, "o-1", "dead_lettered")
	if got := w.attemptCodes(d.ID); got != "503 503" {
		w.t.Errorf("attempts of the dead letter: %q, want 503 503", got)
	}
	rows := w.table("dead-letters", "list", "--subscription", sub)
	if len(rows) != 1 || rows[0]["ID"] != d.ID || rows[0]["EVENT"] != "o-1" || rows[0]["ATTEMPTS"] != "2" {
		w.t.Errorf("dead-letters list: %v", rows)
	}
	recv.healthy.Store(true)
	var res struct{ Redriven int }
	w.json(&res, "dead-letters", "redrive", "--subscription", sub)
	if res.Redriven != 1 {
		w.t.Errorf("dead-letters redrive: %+v, want 1", res)
	}
	w.waitDelivered(d.ID, 3)
	if got := w.attemptCodes(d.ID); got != "503 503 200" {
		w.t.Errorf("attempts after the redrive: %q, want 503 503 200", got)
	}
	return d.ID
}

// redeliverAndRecover redelivers a delivered delivery, then recovers a
// second dead letter with a job followed through jobs get.
func (w *cliWalk) redeliverAndRecover(sub, dlv string, recv *flakyReceiver) {
	var d cliDelivery
	w.json(&d, "deliveries", "redeliver", dlv)
	if d.ID != dlv || d.Status != "pending" {
		w.t.Errorf("deliveries redeliver: %+v, want it pending", d)
	}
	w.waitDelivered(dlv, 4)

	since := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	recv.healthy.Store(false)
	d2 := w.publish(sub, "o-2", "dead_lettered")
	recv.healthy.Store(true)
	rows := w.table("subscriptions", "recover", sub, "--since", since)
	if len(rows) != 1 || !strings.HasPrefix(rows[0]["ID"], "job_") || rows[0]["KIND"] != "recover" || rows[0]["SUBSCRIPTION"] != sub {
		w.t.Fatalf("subscriptions recover: %v", rows)
	}
	job := rows[0]["ID"]
	waitFor(w.t, 20*time.Second, "the recover job done", func() (bool, string) {
		var j struct {
			State       string
			Total, Done int
		}
		w.json(&j, "jobs", "get", job)
		return j.State == "done" && j.Done == 1 && j.Total == 1, j.State
	})
	w.waitDelivered(d2.ID, 3)
}

// endpointsAndTest freezes and enables the subscription's endpoint, and
// sends it a test event.
func (w *cliWalk) endpointsAndTest(sub string, recv *flakyReceiver) {
	rows := w.table("endpoints", "list")
	if len(rows) != 1 || rows[0]["URL"] != recv.url || rows[0]["STATE"] != "enabled" {
		w.t.Fatalf("endpoints list: %v", rows)
	}
	ep := rows[0]["ID"]
	var e struct{ State, StateReason string }
	w.json(&e, "endpoints", "freeze", ep)
	if e.State != "frozen" {
		w.t.Errorf("endpoints freeze: %+v", e)
	}
	if rows := w.table("endpoints", "list", "--state", "frozen"); len(rows) != 1 || rows[0]["ID"] != ep {
		w.t.Errorf("endpoints list --state frozen: %v", rows)
	}
	rows = w.table("endpoints", "enable", ep)
	if len(rows) != 1 || rows[0]["STATE"] != "enabled" || rows[0]["REASON"] != "enabled by hand" {
		w.t.Errorf("endpoints enable: %v", rows)
	}
	out := w.ok("subscriptions", "test", sub, "--type", "order.tested")
	m := regexp.MustCompile(`(?m)^DELIVERY_ID +(dlv_\S+)$`).FindStringSubmatch(out)
	if m == nil {
		w.t.Fatalf("subscriptions test: %q, want a DELIVERY_ID line", out)
	}
	w.waitDelivered(m[1], 1)
}

// refusals: problems of the API exit 1 naming the field, usage errors
// exit 2 naming the flag.
func (w *cliWalk) refusals(sub string) {
	w.fails(1, []string{"400", "(field url)"}, "subscriptions", "create", "--name", "bad", "--url", "ftp://example.com/hook")
	w.fails(1, []string{"404"}, "deliveries", "get", "dlv_01kb2q4x0yb8w2f5k7n1p3r6s9")
	w.fails(1, []string{"(field subscription_id)"}, "deliveries", "list", "--subscription", "orders")
	w.fails(2, []string{"-max-attempts"}, "subscriptions", "update", sub, "--max-attempts", "-1")
	w.fails(2, []string{"-payload"}, "events", "publish", "--type", "t", "--payload", "{")
	w.fails(2, []string{"-status"}, "deliveries", "list", "--status", "lost")
	w.fails(2, []string{"-o"}, "subscriptions", "list", "-o", "yaml")
	// A refused command line changed nothing: still one subscription.
	if rows := w.table("subscriptions", "list"); len(rows) != 1 {
		w.t.Errorf("subscriptions after the refusals: %v", rows)
	}
}

// queue makes a pull subscription, publishes two events to it, receives
// one and acknowledges it (JSON), receives the other and releases it (a
// table), and returns the subscription.
func (w *cliWalk) queue() string {
	var sub struct{ ID string }
	w.json(&sub, "subscriptions", "create", "--name", "queue", "--delivery-mode", "pull", "--event-type", "order.queued")
	for _, id := range []string{"q-1", "q-2"} {
		w.ok("events", "publish", "--type", "order.queued", "--source", "/shop", "--id", id)
	}
	var got struct {
		Data []struct {
			LockToken  string `json:"lock_token"`
			DeliveryID string `json:"delivery_id"`
			Event      struct{ ID string }
		} `json:"data"`
	}
	w.json(&got, "subscriptions", "receive", sub.ID, "--max-events", "1", "--max-wait", "10s")
	if len(got.Data) != 1 || got.Data[0].Event.ID != "q-1" {
		w.t.Fatalf("subscriptions receive -o json: %+v, want q-1", got)
	}
	out := w.ok("subscriptions", "acknowledge", sub.ID, got.Data[0].LockToken)
	if !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, got.Data[0].LockToken) {
		w.t.Errorf("subscriptions acknowledge: %q", out)
	}
	w.waitDelivered(got.Data[0].DeliveryID, 0)
	rows := w.table("subscriptions", "receive", sub.ID, "--max-wait", "10s", "--lock-duration", "60s")
	if len(rows) != 1 || rows[0]["EVENT"] != "q-2" || rows[0]["TYPE"] != "order.queued" || rows[0]["COUNT"] != "1" {
		w.t.Fatalf("subscriptions receive: %v, want q-2", rows)
	}
	w.ok("subscriptions", "release", sub.ID, rows[0]["LOCK TOKEN"], "--delay", "0s")
	var d cliDelivery
	w.json(&d, "deliveries", "get", rows[0]["DELIVERY"])
	if d.Status != "queued" {
		w.t.Errorf("the released delivery: %+v, want queued", d)
	}
	return sub.ID
}

// deletes deletes the subscriptions, and the account (now without
// subscriptions) with the admin key.
func (w *cliWalk) deletes(account string, subs ...string) {
	for _, sub := range subs {
		if out := w.ok("subscriptions", "delete", sub); out != "delete "+sub+": done\n" {
			w.t.Errorf("subscriptions delete: %q", out)
		}
		w.fails(1, []string{"404"}, "subscriptions", "get", sub)
	}
	w.key = adminKey
	if out := w.ok("accounts", "delete", account, "-o", "json"); out != "" {
		w.t.Errorf("accounts delete -o json: %q, want nothing", out)
	}
	w.fails(1, []string{"404"}, "accounts", "get", account)
}
