package subscription_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// input decodes a request body as the API does.
func input(t *testing.T, body string) subscription.Input {
	t.Helper()
	var in subscription.Input
	if err := strictjson.Decode([]byte(body), "", &in); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return in
}

func create(t *testing.T, body, failurePolicy string) (subscription.Subscription, error) {
	t.Helper()
	return input(t, body).New(context.Background(), subscription.Creation{ID: "sub_1", AccountID: "acc_1", Now: t0,
		FailurePolicy: failurePolicy, Destinations: publicOnly(t)})
}

// TestNewDefaults: what a create leaves out takes Herald's defaults and
// its account's failure policy; a pull subscription never fails over to a
// queue; a handshake leaves the subscription awaiting it.
func TestNewDefaults(t *testing.T) {
	sub, err := create(t, `{"name":"n","url":"https://example.com/hook"}`, subscription.FailureQueue)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ID != "sub_1" || sub.AccountID != "acc_1" || !sub.CreatedAt.Equal(t0) || !sub.UpdatedAt.Equal(t0) ||
		sub.State != subscription.StateActive || !sub.DeadLetter || sub.Timeout != subscription.DefaultTimeout ||
		sub.DeliveryMode != subscription.ModePush || sub.FailurePolicy != subscription.FailureQueue {
		t.Fatalf("New = %+v: want the defaults and the account's failure policy", sub)
	}
	if p, err := sub.ResolvePolicy(); err != nil || p.Preset != "eventgrid" {
		t.Fatalf("retry policy %s resolves to %+v, %v; want the eventgrid preset", sub.RetryPolicy, p, err)
	}
	if sub.Signing.Algorithm != signing.HMACSHA256 || len(sub.Signing.Keys) != 1 || len(sub.Signing.Keys[0].Key) != signing.DefaultSecretLen {
		t.Fatalf("signing %+v: want one new hmac-sha256 key", sub.Signing)
	}

	pull, err := create(t, `{"name":"p","delivery_mode":"pull"}`, subscription.FailureQueue)
	if err != nil || pull.FailurePolicy != subscription.FailureRetry || pull.URL != "" {
		t.Fatalf("pull subscription %+v, %v: want failure policy retry and no URL", pull, err)
	}

	v, err := create(t, `{"name":"v","url":"https://example.com/hook","delivery_schema":"eventgrid","validation":"eventgrid"}`, "")
	if err != nil || v.State != subscription.StateAwaitingValidation || len(v.Delivery.ValidationToken) != 43 ||
		v.FailurePolicy != subscription.FailureRetry {
		t.Fatalf("validated subscription %+v, %v: want it awaiting validation with a token", v, err)
	}
}

// TestNewProblems: each problem comes as the kind the API answers it with
// (400, or 422 for combinations and refused destinations), naming the field.
func TestNewProblems(t *testing.T) {
	var (
		field   *strictjson.Error
		combo   *subscription.CombinationError
		refused *subscription.DestinationError
	)
	for _, c := range []struct {
		body, field string
		kind        any
	}{
		{`{}`, "name", &field},
		{`{"name":"n","delivery_mode":"pull","dead_letter_url":"https://example.com/dl"}`, "dead_letter_url", &field},
		{`{"name":"n","url":"https://example.com/","retry_policy":{"preset":"custom"}}`, "retry_policy.delays", &field},
		{`{"name":"n","url":"https://example.com/","signing":{"algorithm":"ed25519","secret":"whsec_x"}}`, "signing.secret", &field},
		{`{"name":"n","url":"https://example.com/","delivery_schema":"cloudevents-binary","max_events_per_batch":2}`, "max_events_per_batch", &combo},
		{`{"name":"n","url":"https://example.com/","validation":"eventgrid"}`, "validation", &combo},
		{`{"name":"n","url":"http://127.0.0.1:8080/"}`, "url", &refused},
		{`{"name":"n","url":"https://example.com/","dead_letter_url":"http://10.0.0.1/"}`, "dead_letter_url", &refused},
	} {
		_, err := create(t, c.body, "")
		if !errors.As(err, c.kind) {
			t.Errorf("%s: %v (%T), want a %T", c.body, err, err, c.kind)
			continue
		}
		var got string
		switch e := err.(type) {
		case *strictjson.Error:
			got = e.Field
		case *subscription.CombinationError:
			got = e.Field
		case *subscription.DestinationError:
			got = e.Field
		}
		if got != c.field {
			t.Errorf("%s: problem names %q, want %q", c.body, got, c.field)
		}
	}
}

// TestUpdate: an update refuses what only a create sets and a pull
// subscription's push fields, and checks a URL against the destination
// policy only when it is sent.
func TestUpdate(t *testing.T) {
	stored := subscription.Subscription{ID: "sub_1", Name: "n", URL: "http://127.0.0.1:8080/", DeliveryMode: subscription.ModePush}
	sub := stored
	if err := input(t, `{"name":"renamed"}`).Update(context.Background(), &sub, publicOnly(t)); err != nil || sub.Name != "renamed" {
		t.Fatalf("renaming a subscription whose URL the policy refuses: %v (%+v); want it renamed", err, sub)
	}
	for _, c := range []struct {
		body, field string
		sub         subscription.Subscription
	}{
		{`{"signing":{}}`, "signing", stored},
		{`{"validation":"none"}`, "validation", stored},
		{`{"url":"http://127.0.0.1:8081/"}`, "url", stored},
		{`{"failure_policy":"queue"}`, "failure_policy", subscription.Subscription{DeliveryMode: subscription.ModePull}},
		{`{"url":"https://example.net/"}`, "url", subscription.Subscription{URL: "https://example.com/",
			Delivery: subscription.DeliveryOptions{Validation: subscription.ValidationCloudEvents}}},
	} {
		sub := c.sub
		err := input(t, c.body).Update(context.Background(), &sub, publicOnly(t))
		var fe *strictjson.Error
		var de *subscription.DestinationError
		switch {
		case errors.As(err, &fe) && fe.Field == c.field:
		case errors.As(err, &de) && de.Field == c.field:
		default:
			t.Errorf("%s: %v, want a problem naming %s", c.body, err, c.field)
		}
	}
}

// publicOnly is the default policy, public addresses only, with a
// resolver that knows no name (see names).
func publicOnly(t *testing.T) destination.Guard {
	return destination.Guard{Resolver: &names{t: t}}
}

// TestOrdering: "ordering" defaults to none (kept as ""), takes key and
// none on create and update, refuses any other value naming ordering and
// leaves the subscription unchanged, and is a push field (a pull
// subscription refuses it). OrderingKeyOf gives the partition key only
// when the subscription orders by key.
func TestOrdering(t *testing.T) {
	sub, err := create(t, `{"name":"n","url":"https://example.com/hook"}`, "")
	if err != nil || sub.Delivery.Ordering != "" || sub.OrderingKeyOf("k") != "" {
		t.Fatalf("default ordering %q, %v: want none", sub.Delivery.Ordering, err)
	}
	sub, err = create(t, `{"name":"n","url":"https://example.com/hook","ordering":"key"}`, "")
	if err != nil || sub.Delivery.Ordering != subscription.OrderingKey || sub.OrderingKeyOf("k") != "k" || sub.OrderingKeyOf("") != "" {
		t.Fatalf("ordering key: %+v, %v", sub.Delivery, err)
	}
	before := sub
	var fe *strictjson.Error
	if err := input(t, `{"ordering":"fifo"}`).Apply(&sub); !errors.As(err, &fe) || fe.Field != "ordering" {
		t.Fatalf("ordering fifo: %v; want an error naming ordering", err)
	}
	if !reflect.DeepEqual(sub.Delivery, before.Delivery) {
		t.Fatalf("a refused ordering changed the subscription: %+v", sub.Delivery)
	}
	if err := input(t, `{"ordering":"none"}`).Apply(&sub); err != nil || sub.Delivery.Ordering != "" {
		t.Fatalf("ordering none: %q, %v", sub.Delivery.Ordering, err)
	}
	if _, err := create(t, `{"name":"p","delivery_mode":"pull","ordering":"key"}`, ""); !errors.As(err, &fe) || fe.Field != "ordering" {
		t.Fatalf("pull with ordering: %v; want an error naming ordering", err)
	}
}

// TestUpdateKeepsHiddenSecrets: every URL field (url, dead_letter_url,
// auth.token_url) sent back as Herald shows it (its password or bare
// token as xxxxx) keeps the stored URL with its secret, on a subscription
// whose endpoint was validated too; a new URL replaces it; a URL that
// shows the mask anywhere else is refused naming its field, on create and
// on update, and changes nothing.
func TestUpdateKeepsHiddenSecrets(t *testing.T) {
	const authJSON = `{"type":"oauth2_client_credentials","token_url":%q,"client_id":"c","client_secret":"s"}`
	for _, secret := range []struct{ stored, shown string }{
		{"https://usr:pw@example.com/x", "https://usr:xxxxx@example.com/x"},
		{"https://TOKEN@example.com/x", "https://xxxxx@example.com/x"},
	} {
		stored := subscription.Subscription{ID: "sub_1", Name: "n", URL: secret.stored, DeliveryMode: subscription.ModePush,
			Delivery: subscription.DeliveryOptions{DeadLetterURL: secret.stored, Validation: subscription.ValidationCloudEvents,
				Auth: &subscription.Auth{Type: subscription.AuthOAuth2, TokenURL: secret.stored, ClientID: "c", ClientSecret: "s"}}}
		sub := stored
		body := fmt.Sprintf(`{"url":%q,"dead_letter_url":%q,"auth":`+authJSON+`}`, secret.shown, secret.shown, secret.shown)
		if err := input(t, body).Update(context.Background(), &sub, publicOnly(t)); err != nil {
			t.Fatalf("%s sent back as shown: %v", secret.stored, err)
		}
		if sub.URL != secret.stored || sub.Delivery.DeadLetterURL != secret.stored || sub.Delivery.Auth.TokenURL != secret.stored {
			t.Fatalf("%s sent back as shown: url %q, dead_letter_url %q, token_url %q; want each kept", secret.stored,
				sub.URL, sub.Delivery.DeadLetterURL, sub.Delivery.Auth.TokenURL)
		}

		stored.Delivery.Validation = ""
		sub = stored
		const fresh = "https://usr:new@example.com/x"
		body = fmt.Sprintf(`{"url":%q,"dead_letter_url":%q,"auth":`+authJSON+`}`, fresh, fresh, fresh)
		if err := input(t, body).Update(context.Background(), &sub, publicOnly(t)); err != nil ||
			sub.URL != fresh || sub.Delivery.DeadLetterURL != fresh || sub.Delivery.Auth.TokenURL != fresh {
			t.Fatalf("new secrets: %v, %+v; want them stored", err, sub)
		}

		masked := strings.Replace(secret.shown, "example.com", "example.net", 1) // not the stored URL
		for field, body := range map[string]string{
			"url":             fmt.Sprintf(`{"url":%q}`, masked),
			"dead_letter_url": fmt.Sprintf(`{"dead_letter_url":%q}`, masked),
			"auth.token_url":  fmt.Sprintf(`{"auth":`+authJSON+`}`, masked),
		} {
			sub := stored
			err := input(t, body).Update(context.Background(), &sub, publicOnly(t))
			if fe := (*strictjson.Error)(nil); !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Detail, "xxxxx") {
				t.Errorf("update %s: %v; want a problem naming %s", body, err, field)
			}
			made := `{"name":"n",` + body[1:]
			if field != "url" {
				made = `{"name":"n","url":"https://example.com/",` + body[1:]
			}
			_, err = create(t, made, "")
			if fe := (*strictjson.Error)(nil); !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("create %s: %v; want a problem naming %s", made, err, field)
			}
		}
	}
}
