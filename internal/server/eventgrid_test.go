package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/messaging"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/eventgrid/azeventgrid"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/eventgrid/aznamespaces"
)

// azureOptions are the Azure SDKs' client options for s: a transport that
// trusts its certificate, and no retries (an error is the test's answer).
func azureOptions(t *testing.T, s *tlsAPI) azcore.ClientOptions {
	tr := tlsTransport(s.cert)
	t.Cleanup(tr.CloseIdleConnections)
	return azcore.ClientOptions{Transport: &http.Client{Transport: tr, Timeout: 30 * time.Second}, Retry: policy.RetryOptions{MaxRetries: -1}}
}

// wantAzureError fails the test unless err is the SDK's response error
// with status and Event Grid's error code.
func wantAzureError(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != status || re.ErrorCode != code {
		t.Errorf("%s: %v; want the SDK's response error %d %s", what, err, status, code)
	}
}

// pullSubscription makes a pull subscription named name with the key, and
// returns its id.
func pullSubscription(b *bundle, key, name string) string {
	b.t.Helper()
	var sub struct{ ID string }
	body := map[string]any{"name": name, "delivery_mode": "pull", "retry_policy": map[string]any{"preset": "custom", "delays": []string{"1s"}, "max_attempts": 5}}
	if code, raw := b.doAs(key, "POST", "/v1/subscriptions", body, &sub); code != http.StatusCreated {
		b.t.Fatalf("create pull subscription: %d %s", code, raw)
	}
	return sub.ID
}

// TestEventGridTopicPublishSDK: Azure's azeventgrid client, unchanged,
// publishes Event Grid events and CloudEvents to POST /api/events over
// HTTPS with a publish key in aeg-sas-key; the events land in the key's
// account. A wrong key is 401, a bad event 400 in Event Grid's error
// form, and stores nothing.
func TestEventGridTopicPublishSDK(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	tn := newTenant(b, "shop")
	subID := pullSubscription(b, tn.accountKey, "all")
	ctx := context.Background()
	client := func(key string) *azeventgrid.Client {
		c, err := azeventgrid.NewClientWithSharedKeyCredential(s.base+"/api/events", azcore.NewKeyCredential(key),
			&azeventgrid.ClientOptions{ClientOptions: azureOptions(t, s)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := client(tn.pubKey)
	_, err := c.PublishEvents(ctx, []azeventgrid.Event{{
		ID: to.Ptr("eg-1"), Subject: to.Ptr("orders/1"), EventType: to.Ptr("Shop.OrderPlaced"), EventTime: to.Ptr(start),
		DataVersion: to.Ptr("1.0"), Data: map[string]any{"total": 12},
	}}, nil)
	if err != nil {
		t.Fatalf("PublishEvents: %v", err)
	}
	ce, err := messaging.NewCloudEvent("/shop", "Shop.OrderShipped", map[string]any{"id": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishCloudEvents(ctx, []messaging.CloudEvent{ce}, nil); err != nil {
		t.Fatalf("PublishCloudEvents: %v", err)
	}
	_, err = client("hk_not_a_key").PublishCloudEvents(ctx, []messaging.CloudEvent{ce}, nil)
	wantAzureError(t, "a wrong key", err, http.StatusUnauthorized, "Unauthorized")
	_, err = c.PublishEvents(ctx, []azeventgrid.Event{{ID: to.Ptr("eg-2"), Subject: to.Ptr("s"), EventType: to.Ptr("Shop.Bad"), DataVersion: to.Ptr("1")}}, nil)
	wantAzureError(t, "an event without eventTime", err, http.StatusBadRequest, "BadRequest")
	if err == nil || !strings.Contains(err.Error(), `"message": "events[0].eventTime`) {
		t.Errorf("the error does not name eventTime first: %v", err)
	}

	got := map[string]string{}
	for _, d := range receiveAs(b, tn.accountKey, subID, 10) {
		got[d.Event["type"].(string)] = d.Event["source"].(string)
	}
	want := map[string]string{"Shop.OrderPlaced": "/accounts/" + tn.id, "Shop.OrderShipped": "/shop"}
	if !maps.Equal(got, want) {
		t.Errorf("received types and sources %v; want %v (and nothing of the refused publishes)", got, want)
	}
}

// receivedAs is an item of /v1's receive, its event decoded.
type receivedAs struct {
	LockToken  string         `json:"lock_token"`
	DeliveryID string         `json:"delivery_id"`
	Event      map[string]any `json:"event"`
}

// receiveAs receives up to max events through /v1 with key.
func receiveAs(b *bundle, key, subID string, max int) []receivedAs {
	b.t.Helper()
	var out struct{ Data []receivedAs }
	if code, raw := b.doAs(key, "POST", "/v1/subscriptions/"+subID+"/receive", map[string]any{"max_events": max}, &out); code != http.StatusOK {
		b.t.Fatalf("receive: %d %s", code, raw)
	}
	return out.Data
}

// TestEventGridNamespaceSDK: Azure's aznamespaces clients, unchanged, over
// HTTPS with an account key as SharedAccessKey: send to the account's
// topic (by name), receive from its subscription (the topic by id),
// acknowledge (twice: the second fails with TokenLost), release with a
// delay (receivable again after it), reject (dead-lettered), renew; a lock
// taken through aznamespaces settles through /v1 and the other way round.
func TestEventGridNamespaceSDK(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	tn := newTenant(b, "shop")
	subID := pullSubscription(b, tn.accountKey, "orders")
	ctx := context.Background()
	sender := nsSender(t, s, "shop", tn.accountKey)
	rc := nsReceiver(t, s, tn.id, "orders", tn.accountKey)
	one := func(id string) *messaging.CloudEvent { return shopEvent(t, id) }
	if _, err := sender.SendEvent(ctx, one("e0"), nil); err != nil {
		t.Fatalf("SendEvent: %v", err)
	}
	if _, err := sender.SendEvents(ctx, []*messaging.CloudEvent{one("e1"), one("e2"), one("e3"), one("e4")}, nil); err != nil {
		t.Fatalf("SendEvents: %v", err)
	}
	receive := func(max int32) []aznamespaces.ReceiveDetails {
		t.Helper()
		res, err := rc.ReceiveEvents(ctx, &aznamespaces.ReceiveEventsOptions{MaxEvents: to.Ptr(max), MaxWaitTime: to.Ptr[int32](0)})
		if err != nil {
			t.Fatalf("ReceiveEvents: %v", err)
		}
		return res.Details
	}
	got := receive(10)
	if len(got) != 5 {
		t.Fatalf("received %d events, want 5", len(got))
	}
	token := map[string]string{}
	for _, d := range got {
		if *d.BrokerProperties.DeliveryCount != 1 || d.Event.Source != "/shop" || d.Event.Type != "Shop.Order" {
			t.Errorf("received %+v, %+v", *d.BrokerProperties, d.Event)
		}
		token[d.Event.ID] = *d.BrokerProperties.LockToken
	}

	ack, err := rc.AcknowledgeEvents(ctx, []string{token["e0"]}, nil)
	if err != nil || len(ack.SucceededLockTokens) != 1 || len(ack.FailedLockTokens) != 0 {
		t.Fatalf("acknowledge: %+v %v", ack, err)
	}
	ack, err = rc.AcknowledgeEvents(ctx, []string{token["e0"]}, nil)
	if err != nil || len(ack.FailedLockTokens) != 1 || *ack.FailedLockTokens[0].LockToken != token["e0"] || *ack.FailedLockTokens[0].Error.Code != "TokenLost" {
		t.Fatalf("acknowledge twice: %+v %v; want the token failed, TokenLost", ack, err)
	}
	rel, err := rc.ReleaseEvents(ctx, []string{token["e1"]}, &aznamespaces.ReleaseEventsOptions{ReleaseDelayInSeconds: to.Ptr(aznamespaces.ReleaseDelayTenSeconds)})
	if err != nil || len(rel.SucceededLockTokens) != 1 {
		t.Fatalf("release: %+v %v", rel, err)
	}
	rej, err := rc.RejectEvents(ctx, []string{token["e2"]}, nil)
	if err != nil || len(rej.SucceededLockTokens) != 1 {
		t.Fatalf("reject: %+v %v", rej, err)
	}
	ren, err := rc.RenewEventLocks(ctx, []string{token["e3"]}, nil)
	if err != nil || len(ren.SucceededLockTokens) != 1 {
		t.Fatalf("renew: %+v %v", ren, err)
	}
	// e4's lock, taken through aznamespaces, settles through /v1.
	settleV1(b, tn.accountKey, subID, "acknowledge", token["e4"])
	if again := receive(10); len(again) != 0 {
		t.Fatalf("before the release's delay: received %d", len(again))
	}
	b.clk.Advance(10 * time.Second)
	again := receive(10)
	if len(again) != 1 || again[0].Event.ID != "e1" || *again[0].BrokerProperties.DeliveryCount != 2 {
		t.Fatalf("after the release's delay: %+v", again)
	}
	// And a lock taken through /v1... (e1's, released again through /v1
	// first) settles through aznamespaces.
	settleV1(b, tn.accountKey, subID, "release", *again[0].BrokerProperties.LockToken)
	v1 := receiveAs(b, tn.accountKey, subID, 10)
	if len(v1) != 1 {
		t.Fatalf("/v1 receive: %+v", v1)
	}
	if ack, err := rc.AcknowledgeEvents(ctx, []string{v1[0].LockToken}, nil); err != nil || len(ack.SucceededLockTokens) != 1 {
		t.Fatalf("aznamespaces acknowledge of a /v1 lock: %+v %v", ack, err)
	}

	status := map[string]string{}
	for _, d := range deliveriesAs(b, tn.accountKey, subID) {
		status[d.EventID] = d.Status
	}
	if want := map[string]string{"e0": "delivered", "e1": "delivered", "e2": "dead_lettered", "e3": "queued", "e4": "delivered"}; !maps.Equal(status, want) {
		t.Errorf("the deliveries' statuses by event: %v, want %v", status, want)
	}
}

// TestEventGridNamespaceRefusals: through aznamespaces, an unknown
// subscription is 404, a wrong key 401, another account's topic 404; an
// admin key reaches any account's topic, named by the account's name, and
// a subscription by its id.
func TestEventGridNamespaceRefusals(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	tn := newTenant(b, "shop")
	other := newTenant(b, "other")
	subID := pullSubscription(b, tn.accountKey, "orders")
	ctx := context.Background()
	_, err := nsReceiver(t, s, tn.id, "nope", tn.accountKey).ReceiveEvents(ctx, &aznamespaces.ReceiveEventsOptions{MaxWaitTime: to.Ptr[int32](0)})
	wantAzureError(t, "an unknown subscription", err, http.StatusNotFound, "NotFound")
	_, err = nsReceiver(t, s, tn.id, "orders", "hk_wrong").ReceiveEvents(ctx, &aznamespaces.ReceiveEventsOptions{MaxWaitTime: to.Ptr[int32](0)})
	wantAzureError(t, "a wrong key", err, http.StatusUnauthorized, "Unauthorized")
	_, err = nsReceiver(t, s, tn.id, "orders", other.accountKey).ReceiveEvents(ctx, &aznamespaces.ReceiveEventsOptions{MaxWaitTime: to.Ptr[int32](0)})
	wantAzureError(t, "another account's topic", err, http.StatusNotFound, "NotFound")
	// An admin key reaches any account's topic.
	if _, err := nsReceiver(t, s, "shop", subID, adminKey).ReceiveEvents(ctx, &aznamespaces.ReceiveEventsOptions{MaxWaitTime: to.Ptr[int32](0)}); err != nil {
		t.Errorf("an admin's receive by the account's name and the subscription's id: %v", err)
	}
}

// nsSender is an aznamespaces sender to s's topic with key.
func nsSender(t *testing.T, s *tlsAPI, topic, key string) *aznamespaces.SenderClient {
	c, err := aznamespaces.NewSenderClientWithSharedKeyCredential(s.base, topic, azcore.NewKeyCredential(key),
		&aznamespaces.SenderClientOptions{ClientOptions: azureOptions(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nsReceiver is an aznamespaces receiver of s's topic's subscription with
// key.
func nsReceiver(t *testing.T, s *tlsAPI, topic, sub, key string) *aznamespaces.ReceiverClient {
	c, err := aznamespaces.NewReceiverClientWithSharedKeyCredential(s.base, topic, sub, azcore.NewKeyCredential(key),
		&aznamespaces.ReceiverClientOptions{ClientOptions: azureOptions(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shopEvent is a CloudEvent of id, as aznamespaces sends it.
func shopEvent(t *testing.T, id string) *messaging.CloudEvent {
	ev, err := messaging.NewCloudEvent("/shop", "Shop.Order", map[string]any{"n": id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = id
	return &ev
}

// settleV1 settles one lock token through /v1 with key, and fails the
// test unless it succeeds.
func settleV1(b *bundle, key, subID, action, token string) {
	b.t.Helper()
	var out struct{ Succeeded []string }
	if code, raw := b.doAs(key, "POST", "/v1/subscriptions/"+subID+"/"+action, map[string]any{"lock_tokens": []string{token}}, &out); code != http.StatusOK || len(out.Succeeded) != 1 {
		b.t.Fatalf("/v1 %s: %d %s", action, code, raw)
	}
}

// deliveriesAs lists a subscription's deliveries with key.
func deliveriesAs(b *bundle, key, subID string) []delivery {
	b.t.Helper()
	var out struct{ Data []delivery }
	if code, raw := b.doAs(key, "GET", "/v1/deliveries?limit=1000&subscription_id="+subID, nil, &out); code != http.StatusOK {
		b.t.Fatalf("list deliveries: %d %s", code, raw)
	}
	return out.Data
}

// TestEventGridBadInput: bad input on the Event Grid routes is answered in
// Event Grid's error form, the message naming the parameter or field at
// fault first, and changes nothing: the lock the refused settles named
// still settles, and the refused publishes stored nothing.
func TestEventGridBadInput(t *testing.T) {
	b := setup(t)
	tn := newTenant(b, "shop")
	subID := pullSubscription(b, tn.accountKey, "orders")
	ev := map[string]any{"specversion": "1.0", "id": "e1", "source": "/shop", "type": "Shop.Order"}
	if code, raw := b.doAs(tn.pubKey, "POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, raw)
	}
	items := receiveAs(b, tn.accountKey, subID, 1)
	if len(items) != 1 {
		t.Fatalf("received %d", len(items))
	}
	token := items[0].LockToken
	sub := "/topics/shop/eventsubscriptions/orders"
	ack := `{"lockTokens": ["` + token + `"]}`
	const ce = "application/cloudevents+json"
	for _, c := range []struct {
		path, ct, body string
		status         int
		code, message  string
	}{
		{sub + ":receive?maxEvents=0", "", "", 400, "BadRequest", "maxEvents: must be a whole number from 1 to 1000"},
		{sub + ":receive?maxEvents=x", "", "", 400, "BadRequest", "maxEvents: "},
		{sub + ":receive?maxWaitTime=121", "", "", 400, "BadRequest", "maxWaitTime: must be a whole number from 0 to 120"},
		{sub + ":receive?maxevents=1", "", "", 400, "BadRequest", "maxevents: unknown query parameter"},
		{sub + ":release?releaseDelayInSeconds=5", "application/json", ack, 400, "BadRequest", "releaseDelayInSeconds: must be one of 0, 10, 60, 600, 3600"},
		{sub + ":acknowledge?releaseDelayInSeconds=10", "application/json", ack, 400, "BadRequest", "releaseDelayInSeconds: unknown query parameter"},
		{sub + ":acknowledge", "application/json", `{"lockTokens": []}`, 400, "BadRequest", "lockTokens is required"},
		{sub + ":acknowledge", "application/json", `{"lockTokens": ["` + token + `", "nope"]}`, 400, "BadRequest", "lockTokens[1]: not a lock token"},
		{sub + ":acknowledge", "application/json", `{"lock_tokens": ["` + token + `"]}`, 400, "BadRequest", "lock_tokens: "},
		{sub + ":reject", "text/plain", ack, 415, "UnsupportedMediaType", "content-type: "},
		{sub + ":renew", "application/json", ack, 404, "NotFound", "no route POST " + sub + ":renew (this path ends in one of :receive, :acknowledge, :release, :reject, :renewLock)"},
		{"/topics/shop/eventsubscriptions/nope:acknowledge", "application/json", ack, 404, "NotFound", `subscription "nope" not found in topic "shop"`},
		{"/topics/nope/eventsubscriptions/orders:acknowledge", "application/json", ack, 404, "NotFound", `topic "nope" not found`},
		{"/topics/shop:publish", ce, `{"specversion": "1.0", "id": "x", "source": "/s"}`, 400, "BadRequest", "type is required"},
		{"/topics/shop:publish", "application/xml", "<x/>", 415, "UnsupportedMediaType", "content-type: "},
		{"/topics/shop:send", ce, `{}`, 404, "NotFound", "(this path ends in one of :publish)"},
		{"/api/events", "application/json", `[{"id": "x", "subject": "s", "eventType": "T", "eventTime": "soon"}]`, 400, "BadRequest", "events[0].eventTime: "},
	} {
		header := map[string]string{"Authorization": "SharedAccessKey " + tn.accountKey}
		if c.ct != "" {
			header["Content-Type"] = c.ct
		}
		resp, raw := b.send("POST", c.path, header, c.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(raw, &e); err != nil || resp.StatusCode != c.status || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.message) {
			t.Errorf("POST %s: %d %s; want %d %s, message holding %q", c.path, resp.StatusCode, raw, c.status, c.code, c.message)
		}
	}
	// Nothing changed: the lock still settles, and only e1 was published.
	settleV1(b, tn.accountKey, subID, "acknowledge", token)
	if ds := deliveriesAs(b, tn.accountKey, subID); len(ds) != 1 {
		t.Errorf("%d deliveries; the refused publishes stored some", len(ds))
	}
}

// TestEventGridReceiveWaits: an aznamespaces receive with maxWaitTime 120
// (over Herald's own 60 s bound for /v1) waits on the queue, over HTTP/2,
// until an event sent to the topic wakes it; without any (the default
// wait, 60 s on the clock) it answers an empty list.
func TestEventGridReceiveWaits(t *testing.T) {
	b := setup(t)
	s := serveTLS(b)
	tn := newTenant(b, "shop")
	pullSubscription(b, tn.accountKey, "orders")
	ctx := context.Background()
	rc := nsReceiver(t, s, "shop", "orders", tn.accountKey)
	waiting := func() bool { return b.srv.API.Queue.(interface{ Waiting() int }).Waiting() == 1 }
	type result struct {
		details []aznamespaces.ReceiveDetails
		err     error
	}
	got := make(chan result, 1)
	receive := func(opts *aznamespaces.ReceiveEventsOptions) {
		res, err := rc.ReceiveEvents(ctx, opts)
		got <- result{res.Details, err}
	}
	go receive(&aznamespaces.ReceiveEventsOptions{MaxWaitTime: to.Ptr[int32](120)})
	eventually(t, "the receive waiting", waiting)
	if _, err := nsSender(t, s, "shop", tn.pubKey).SendEvent(ctx, shopEvent(t, "late"), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || len(r.details) != 1 || r.details[0].Event.ID != "late" {
			t.Fatalf("the woken receive: %+v %v", r.details, r.err)
		}
		if _, err := rc.AcknowledgeEvents(ctx, []string{*r.details[0].BrokerProperties.LockToken}, nil); err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting receive was not woken by the send")
	}
	go receive(nil)
	eventually(t, "the second receive waiting", waiting)
	b.clk.Advance(60 * time.Second)
	select {
	case r := <-got:
		if r.err != nil || len(r.details) != 0 {
			t.Fatalf("a receive of an empty queue: %+v %v", r.details, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the receive did not end at the default 60 s")
	}
}
