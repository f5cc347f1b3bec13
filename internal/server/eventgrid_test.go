package server_test

import (
	"context"
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
