package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// methodCall calls one client method with every parameter set (full
// fills each ListParams and query struct), so the request it sends shows
// every query parameter the method can send.
type methodCall func(ctx context.Context, c *Client) error

// ignore drops a method's answer and keeps its error.
func ignore[T any](_ T, err error) error { return err }

// methodCalls has one call per exported method of the Client's services,
// keyed "Service.Method"; TestClientMethodsAreOpenAPIOperations checks
// that it names them all.
var methodCalls = map[string]methodCall{
	"Accounts.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.Accounts.Create(ctx, AccountInput{Name: "a"}))
	},
	"Accounts.List": func(ctx context.Context, c *Client) error { return ignore(c.Accounts.List(ctx, full[ListParams]())) },
	"Sources.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.Sources.Create(ctx, SourceInput{Type: new("nats")}))
	},
	"Sources.List": func(ctx context.Context, c *Client) error { return ignore(c.Sources.List(ctx, full[ListParams]())) },
	"Sources.Get":  func(ctx context.Context, c *Client) error { return ignore(c.Sources.Get(ctx, "src_1")) },
	"Sources.Update": func(ctx context.Context, c *Client) error {
		return ignore(c.Sources.Update(ctx, "src_1", SourceInput{}))
	},
	"Sources.Delete": func(ctx context.Context, c *Client) error { return c.Sources.Delete(ctx, "src_1") },
	"Sources.Pause":  func(ctx context.Context, c *Client) error { return ignore(c.Sources.Pause(ctx, "src_1")) },
	"Sources.Resume": func(ctx context.Context, c *Client) error { return ignore(c.Sources.Resume(ctx, "src_1")) },
	"Sources.DeadLetters": func(ctx context.Context, c *Client) error {
		return ignore(c.Sources.DeadLetters(ctx, "src_1", full[ListParams]()))
	},
	"EventTypes.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.EventTypes.Create(ctx, EventTypeInput{Name: new("a.b")}))
	},
	"EventTypes.List": func(ctx context.Context, c *Client) error {
		return ignore(c.EventTypes.List(ctx, EventTypeListParams{ListParams: full[ListParams](), Group: "g", IncludeArchived: true}))
	},
	"EventTypes.Get": func(ctx context.Context, c *Client) error { return ignore(c.EventTypes.Get(ctx, "a.b")) },
	"EventTypes.Update": func(ctx context.Context, c *Client) error {
		return ignore(c.EventTypes.Update(ctx, "a.b", EventTypeInput{}))
	},
	"EventTypes.Archive":  func(ctx context.Context, c *Client) error { return ignore(c.EventTypes.Archive(ctx, "a.b")) },
	"EventTypes.AsyncAPI": func(ctx context.Context, c *Client) error { return ignore(c.EventTypes.AsyncAPI(ctx)) },
	"Accounts.Get":        func(ctx context.Context, c *Client) error { return ignore(c.Accounts.Get(ctx, "acc_1")) },
	"Accounts.Update": func(ctx context.Context, c *Client) error {
		return ignore(c.Accounts.Update(ctx, "acc_1", AccountUpdate{}))
	},
	"Accounts.Delete": func(ctx context.Context, c *Client) error { return c.Accounts.Delete(ctx, "acc_1") },
	"Keys.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.Keys.Create(ctx, APIKeyInput{Role: "publish"}))
	},
	"Keys.List":   func(ctx context.Context, c *Client) error { return ignore(c.Keys.List(ctx, full[ListParams]())) },
	"Keys.Delete": func(ctx context.Context, c *Client) error { return c.Keys.Delete(ctx, "key_1") },
	"Subscriptions.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Create(ctx, SubscriptionInput{Name: "s"}))
	},
	"Subscriptions.List": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.List(ctx, full[SubscriptionListParams]()))
	},
	"Subscriptions.Get": func(ctx context.Context, c *Client) error { return ignore(c.Subscriptions.Get(ctx, "sub_1")) },
	"Subscriptions.Update": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Update(ctx, "sub_1", SubscriptionUpdate{}))
	},
	"Subscriptions.Delete": func(ctx context.Context, c *Client) error { return c.Subscriptions.Delete(ctx, "sub_1") },
	"Subscriptions.Secret": func(ctx context.Context, c *Client) error { return ignore(c.Subscriptions.Secret(ctx, "sub_1")) },
	"Subscriptions.RotateSecret": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.RotateSecret(ctx, "sub_1", RotateSecretParams{}))
	},
	"Subscriptions.Reactivate": func(ctx context.Context, c *Client) error { return ignore(c.Subscriptions.Reactivate(ctx, "sub_1")) },
	"Subscriptions.Deactivate": func(ctx context.Context, c *Client) error { return ignore(c.Subscriptions.Deactivate(ctx, "sub_1")) },
	"Subscriptions.Recover": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Recover(ctx, "sub_1", RecoverParams{Since: time.Now()}))
	},
	"Subscriptions.Test": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Test(ctx, "sub_1", TestEventParams{}))
	},
	"Subscriptions.FilterTestUnsaved": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.FilterTestUnsaved(ctx, FilterTestParams{Event: Event{ID: "1", Source: "/s", Type: "t"}}))
	},
	"Subscriptions.FilterTest": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.FilterTest(ctx, "sub_1", Event{ID: "1", Source: "/s", Type: "t"}))
	},
	"Subscriptions.Receive": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Receive(ctx, "sub_1", ReceiveParams{}))
	},
	"Subscriptions.Acknowledge": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Acknowledge(ctx, "sub_1", []string{"t"}))
	},
	"Subscriptions.Release": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Release(ctx, "sub_1", ReleaseParams{LockTokens: []string{"t"}}))
	},
	"Subscriptions.Reject": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.Reject(ctx, "sub_1", []string{"t"}))
	},
	"Subscriptions.RenewLock": func(ctx context.Context, c *Client) error {
		return ignore(c.Subscriptions.RenewLock(ctx, "sub_1", RenewLockParams{LockTokens: []string{"t"}}))
	},
	"Jobs.Get": func(ctx context.Context, c *Client) error { return ignore(c.Jobs.Get(ctx, "job_1")) },
	"PortalSessions.Create": func(ctx context.Context, c *Client) error {
		return ignore(c.PortalSessions.Create(ctx, PortalSessionInput{}))
	},
	"Events.Publish": func(ctx context.Context, c *Client) error {
		return ignore(c.Events.Publish(ctx, Event{ID: "1", Source: "/s", Type: "t"}))
	},
	"Events.PublishBatch": func(ctx context.Context, c *Client) error {
		return ignore(c.Events.PublishBatch(ctx, []Event{{ID: "1", Source: "/s", Type: "t"}}))
	},
	"Events.PublishRaw": func(ctx context.Context, c *Client) error {
		return ignore(c.Events.PublishRaw(ctx, RawPublish{ContentType: "text/plain", Body: []byte("x"),
			Header: http.Header{"Ce-Id": {"1"}, "Ce-Source": {"/s"}, "Ce-Type": {"t"}, "Ce-Specversion": {"1.0"}}}))
	},
	"Deliveries.List": func(ctx context.Context, c *Client) error {
		return ignore(c.Deliveries.List(ctx, full[DeliveryListParams]()))
	},
	"Deliveries.ListQueued": func(ctx context.Context, c *Client) error {
		return ignore(c.Deliveries.ListQueued(ctx, full[DeliveryListParams]()))
	},
	"Deliveries.Get": func(ctx context.Context, c *Client) error { return ignore(c.Deliveries.Get(ctx, "dlv_1")) },
	"Deliveries.Attempts": func(ctx context.Context, c *Client) error {
		return ignore(c.Deliveries.Attempts(ctx, "dlv_1", full[ListParams]()))
	},
	"Deliveries.Redeliver": func(ctx context.Context, c *Client) error { return ignore(c.Deliveries.Redeliver(ctx, "dlv_1")) },
	"DeadLetters.List": func(ctx context.Context, c *Client) error {
		return ignore(c.DeadLetters.List(ctx, full[DeadLetterListParams]()))
	},
	"DeadLetters.Redrive": func(ctx context.Context, c *Client) error {
		return ignore(c.DeadLetters.Redrive(ctx, RedriveParams{IDs: []string{"dlv_1"}}))
	},
	"Endpoints.List": func(ctx context.Context, c *Client) error {
		return ignore(c.Endpoints.List(ctx, full[EndpointListParams]()))
	},
	"Endpoints.Get": func(ctx context.Context, c *Client) error { return ignore(c.Endpoints.Get(ctx, "ep_1")) },
	"Endpoints.Update": func(ctx context.Context, c *Client) error {
		return ignore(c.Endpoints.Update(ctx, "ep_1", EndpointUpdate{}))
	},
	"Endpoints.Enable": func(ctx context.Context, c *Client) error { return ignore(c.Endpoints.Enable(ctx, "ep_1")) },
	"Endpoints.Freeze": func(ctx context.Context, c *Client) error { return ignore(c.Endpoints.Freeze(ctx, "ep_1")) },
	"Stats.Get":        func(ctx context.Context, c *Client) error { return ignore(c.Stats.Get(ctx, full[StatsParams]())) },
	"Validation.Get":   func(ctx context.Context, c *Client) error { return ignore(c.Validation.Get(ctx, "sub_1", "code")) },
}

// full returns a P with every string field "x" and every int field 1,
// embedded structs included.
func full[P any]() P {
	var p P
	fill(reflect.ValueOf(&p).Elem())
	return p
}

// fill sets v's string fields to "x" and int fields to 1, recursively.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(1)
		case reflect.Struct:
			fill(f)
		}
	}
}

// sentRequest is what the client sent for one method call.
type sentRequest struct {
	method, path string
	query        []string // parameter names, sorted
	body         bool
	key          bool // an Authorization header
}

// recordRequests calls every method of methodCalls against a server that
// records each request and answers 200 "{}", with a client that has a key
// and an account; it returns each method's one request.
func recordRequests(t *testing.T) map[string]sentRequest {
	t.Helper()
	var mu sync.Mutex
	var last []sentRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var q []string
		for k := range r.URL.Query() {
			q = append(q, k)
		}
		slices.Sort(q)
		mu.Lock()
		last = append(last, sentRequest{r.Method, r.URL.Path, q, len(body) > 0, r.Header.Get("Authorization") != ""})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithKey("k"), WithAccount("acc_x"), WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]sentRequest{}
	for name, call := range methodCalls {
		last = nil
		if err := call(context.Background(), c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(last) != 1 {
			t.Fatalf("%s sent %d requests, want 1", name, len(last))
		}
		sent[name] = last[0]
	}
	return sent
}

// serviceMethods returns "Service.Method" for every exported method of
// every service field of Client.
func serviceMethods() []string {
	var names []string
	ct := reflect.TypeFor[Client]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if !f.IsExported() {
			continue
		}
		for j := range f.Type.NumMethod() {
			names = append(names, f.Name+"."+f.Type.Method(j).Name)
		}
	}
	slices.Sort(names)
	return names
}

// matchPath reports whether the request path p fits the template tmpl
// ({x} segments match any one non-empty segment).
func matchPath(tmpl, p string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(p, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") && ps[i] != "" {
			continue
		}
		if ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// checkOperations compares the requests the client's methods sent with
// the document's /v1 operations: every method's request is an operation
// (path, query parameters exactly, a body only where the operation takes
// one and always where it requires one, a key unless it is public), and
// every operation is some method's. It returns what differs.
func checkOperations(ops map[string]docOp, sent map[string]sentRequest) []string {
	var diffs []string
	covered := map[string]bool{}
	for _, name := range slices.Sorted(mapsKeys(sent)) {
		r := sent[name]
		var op *docOp
		for _, o := range ops {
			if o.method == r.method && matchPath(o.path, r.path) && (op == nil || strings.Count(o.path, "{") < strings.Count(op.path, "{")) {
				op = &o
			}
		}
		if op == nil {
			diffs = append(diffs, fmt.Sprintf("%s sends %s %s, which openapi.yaml does not describe", name, r.method, r.path))
			continue
		}
		key := op.method + " " + op.path
		covered[key] = true
		if !slices.Equal(r.query, op.query) {
			diffs = append(diffs, fmt.Sprintf("%s: query parameters %v, openapi.yaml's %s takes %v", name, r.query, key, op.query))
		}
		if r.body && !op.hasBody || op.bodyRequired && !r.body {
			diffs = append(diffs, fmt.Sprintf("%s: sends a body %v, openapi.yaml's %s has one %v (required %v)", name, r.body, key, op.hasBody, op.bodyRequired))
		}
		if r.key == op.public {
			diffs = append(diffs, fmt.Sprintf("%s: sends a key %v, openapi.yaml's %s is public %v", name, r.key, key, op.public))
		}
	}
	for _, key := range slices.Sorted(mapsKeys(ops)) {
		if !covered[key] {
			diffs = append(diffs, fmt.Sprintf("openapi.yaml's %s has no client method", key))
		}
	}
	return diffs
}

// mapsKeys returns an iterator over m's keys.
func mapsKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestClientMethodsAreOpenAPIOperations holds the client's methods to
// internal/api/openapi.yaml: methodCalls names every service method, and
// the requests they send are exactly the document's /v1 operations, with
// the query parameters each takes (account_id where it is listed), bodies
// where they go, and the key but on public operations.
func TestClientMethodsAreOpenAPIOperations(t *testing.T) {
	methods := serviceMethods()
	if got := slices.Sorted(mapsKeys(methodCalls)); !slices.Equal(got, methods) {
		t.Fatalf("methodCalls names %v,\nthe client's services have %v", got, methods)
	}
	ops := v1Operations(loadOpenAPI(t))
	if len(ops) < 40 {
		t.Fatalf("found %d /v1 operations in openapi.yaml, want 40 or more", len(ops))
	}
	for _, d := range checkOperations(ops, recordRequests(t)) {
		t.Error(d)
	}
}
