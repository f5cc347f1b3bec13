package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Page sizes.
const (
	// listSize is the items a list page shows.
	listSize = 50
	// recentDeliveries is the deliveries a subscription's page shows,
	// newest first.
	recentDeliveries = 20
)

// subscriptionPages are the subscriptions list and a subscription's page.
type subscriptionPages struct{ base }

// subscriptionRow is one subscription in the list.
type subscriptionRow struct {
	ID, Name, URL, State, Mode, Account string
	// EndpointID and EndpointState are its endpoint's ID and circuit
	// state (endpointState).
	EndpointID, EndpointState string
}

// subscriptions shows a page of subscriptions (accountPage).
func (sp *subscriptionPages) subscriptions(w http.ResponseWriter, r *http.Request, v *visit) {
	view, ok := accountPage(sp.base, w, r, v, "/console/subscriptions", sp.store.ListSubscriptions,
		func(s subscription.Subscription) subscriptionRow {
			row := subscriptionRow{ID: s.ID, Name: s.Name, URL: redact.URL(s.URL), State: s.State,
				Mode: cmp.Or(s.DeliveryMode, subscription.ModePush), Account: account.OrDefault(s.AccountID), EndpointID: s.EndpointID}
			_, row.EndpointState = sp.endpointState(r.Context(), s.EndpointID)
			return row
		})
	if ok {
		sp.render(w, r, http.StatusOK, "subscriptions", v, "Subscriptions", view)
	}
}

// subscriptionView is one subscription's page: what the API's resource
// shows (URLs without their passwords, secret headers by name only, the
// auth's secrets as ****), and its most recent deliveries.
type subscriptionView struct {
	ID, Name, Account, URL, Mode, State, FailurePolicy, EndpointID string
	EventTypes                                                     []string
	SubjectBeginsWith, SubjectEndsWith                             string
	AdvancedFilters                                                string
	// FilterExpression and Transform are its CEL expressions ("": none).
	FilterExpression, Transform string
	RetryPolicy                 policyView
	// EndpointURL and EndpointState are its endpoint's URL and circuit
	// state ("" when it has none or it could not be read).
	EndpointURL, EndpointState string
	Timeout                    time.Duration
	Headers, DynamicHeaders    map[string]string
	SecretHeaders              []string
	// Auth is its endpoint authentication, secrets masked (nil: none).
	Auth                                               *authView
	DeadLetter                                         bool
	DeadLetterURL, Schema, Validation, ValidationError string
	Ordering                                           string
	CreatedAt, UpdatedAt                               time.Time
	// Deliveries are the recentDeliveries newest; More says there are
	// older ones.
	Deliveries deliveryTable
	More       bool
	// Notice says what the action the page follows did
	// (subscriptionNotices).
	Notice string
	// Since is the recover form's example time (exampleSince).
	Since string
}

// subscription shows one subscription, its actions' forms
// (subscription_actions.go) and its recent deliveries: 404 for
// one that does not exist, and for an account key one of another account.
func (sp *subscriptionPages) subscription(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sp.ownSubscription(w, r, v)
	if !ok {
		return
	}
	ds, next, err := sp.store.ListDeliveries(r.Context(), store.DeliveryFilter{AccountID: account.OrDefault(sub.AccountID),
		SubscriptionID: sub.ID, Page: store.Page{Limit: recentDeliveries}})
	if err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	view := toSubscriptionView(sub)
	view.Deliveries, view.More = deliveryTable{Link: consoleDeliveries, Items: sp.rowsOf(r.Context(), ds)}, next != ""
	view.EndpointURL, view.EndpointState = sp.endpointState(r.Context(), sub.EndpointID)
	view.Notice = subscriptionNotices[r.URL.Query().Get("done")]
	view.Since = exampleSince(sp.now())
	sp.render(w, r, http.StatusOK, "subscription", v, "Subscription "+sub.Name, view)
}

// toSubscriptionView returns what the page shows of s, the defaults of
// fields left empty filled in as the API shows them.
func toSubscriptionView(s subscription.Subscription) subscriptionView {
	view := subscriptionView{
		ID: s.ID, Name: s.Name, Account: account.OrDefault(s.AccountID), URL: redact.URL(s.URL),
		Mode: cmp.Or(s.DeliveryMode, subscription.ModePush), State: s.State,
		FailurePolicy: cmp.Or(s.FailurePolicy, subscription.FailureRetry), EndpointID: s.EndpointID,
		EventTypes: s.EventTypes, SubjectBeginsWith: s.SubjectBeginsWith, SubjectEndsWith: s.SubjectEndsWith,
		AdvancedFilters: string(s.Filters.Advanced), RetryPolicy: policyOf(s),
		FilterExpression: s.Filters.Expression, Transform: s.Delivery.Transform,
		Timeout: s.Timeout, Headers: s.Headers, DynamicHeaders: s.Delivery.DynamicHeaders, DeadLetter: s.DeadLetter, DeadLetterURL: redact.URL(s.Delivery.DeadLetterURL),
		Schema:     cmp.Or(s.Delivery.Schema, event.SchemaCloudEvents),
		Validation: cmp.Or(s.Delivery.Validation, subscription.ValidationNone), ValidationError: redact.Text(s.Delivery.ValidationError),
		Ordering:  cmp.Or(s.Delivery.Ordering, subscription.OrderingNone),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Auth: toAuthView(s.Delivery.Auth),
	}
	for name := range s.SecretHeaders {
		view.SecretHeaders = append(view.SecretHeaders, name)
	}
	slices.Sort(view.SecretHeaders)
	return view
}

// endpointState returns the URL (without its password) and circuit state
// of the endpoint id, as the scheduler sees it when it holds it; "" when
// there is none or it cannot be read.
func (b base) endpointState(ctx context.Context, id string) (url, state string) {
	if id == "" {
		return "", ""
	}
	ep, ok := holdReader(ctx, b.store, b.live, b.now()).Endpoint(id)
	if !ok {
		return "", ""
	}
	return redact.URL(ep.URL), string(cmp.Or(ep.Health.State, health.Enabled))
}
