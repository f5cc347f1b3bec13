package console

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/event"
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

// subscriptionsView is the subscriptions list: a page of one account's
// subscriptions (of every account for an admin who picked none).
type subscriptionsView struct {
	// Accounts are the admin's choices: the first store.MaxLimit
	// accounts (another is reached with ?account_id=).
	Accounts []account.Account
	// Account is the account shown; "" for every account.
	Account string
	Items   []subscriptionRow
	// Next is the URL of the next page ("" on the last); First that of
	// the first page when this is a later one.
	Next, First string
}

// subscriptionRow is one subscription in the list.
type subscriptionRow struct {
	ID, Name, URL, State, Mode, Account string
}

// subscriptions shows a page of subscriptions: of the key's own account,
// or for an admin of the account picked (?account_id=, every account when
// none), after ?cursor=.
func (sp *subscriptionPages) subscriptions(w http.ResponseWriter, r *http.Request, v *visit) {
	acc, ok := sp.accountParam(w, r, v)
	if !ok {
		return
	}
	cursor := r.URL.Query().Get("cursor")
	subs, next, err := sp.store.ListSubscriptions(r.Context(), acc, store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	view := subscriptionsView{Account: acc}
	for _, s := range subs {
		view.Items = append(view.Items, subscriptionRow{ID: s.ID, Name: s.Name, URL: redact.URL(s.URL), State: s.State,
			Mode: cmp.Or(s.DeliveryMode, subscription.ModePush), Account: account.OrDefault(s.AccountID)})
	}
	if next != "" {
		view.Next = listURL(acc, next)
	}
	if cursor != "" {
		view.First = listURL(acc, "")
	}
	if view.Accounts, ok = sp.accountChoices(w, r, v); !ok {
		return
	}
	sp.render(w, r, http.StatusOK, "subscriptions", v, "Subscriptions", view)
}

// listURL is the URL of the subscriptions list of acc after cursor.
func listURL(acc, cursor string) string {
	return withQuery("/console/subscriptions", url.Values{"account_id": {acc}, "cursor": {cursor}})
}

// subscriptionView is one subscription's page: what the API's resource
// shows (URLs without their passwords, secret headers by name only), and
// its most recent deliveries.
type subscriptionView struct {
	ID, Name, Account, URL, Mode, State, FailurePolicy, EndpointID string
	EventTypes                                                     []string
	SubjectBeginsWith, SubjectEndsWith                             string
	AdvancedFilters, RetryPolicy                                   string
	Timeout                                                        time.Duration
	Headers                                                        map[string]string
	SecretHeaders                                                  []string
	DeadLetter                                                     bool
	DeadLetterURL, Schema, Validation, ValidationError             string
	Ordering                                                       string
	CreatedAt, UpdatedAt                                           time.Time
	// Deliveries are the recentDeliveries newest; More says there are
	// older ones.
	Deliveries []delivery.Delivery
	More       bool
	// Notice says what the action the page follows did
	// (subscriptionNotices).
	Notice string
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
	view.Deliveries, view.More = ds, next != ""
	view.Notice = subscriptionNotices[r.URL.Query().Get("done")]
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
		AdvancedFilters: string(s.Filters.Advanced), RetryPolicy: cmp.Or(string(s.RetryPolicy), subscription.DefaultRetryPolicy),
		Timeout: s.Timeout, Headers: s.Headers, DeadLetter: s.DeadLetter, DeadLetterURL: redact.URL(s.Delivery.DeadLetterURL),
		Schema:     cmp.Or(s.Delivery.Schema, event.SchemaCloudEvents),
		Validation: cmp.Or(s.Delivery.Validation, subscription.ValidationNone), ValidationError: s.Delivery.ValidationError,
		Ordering:  cmp.Or(s.Delivery.Ordering, subscription.OrderingNone),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
	for name := range s.SecretHeaders {
		view.SecretHeaders = append(view.SecretHeaders, name)
	}
	slices.Sort(view.SecretHeaders)
	return view
}
