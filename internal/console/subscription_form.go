package console

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// subscriptionForm is the create and edit form's fields as typed. Its
// inputs are named as the API's fields are, so a problem's field names
// the input at fault. The form holds the fields most subscriptions set;
// the others are the API's (docs/subscriptions.md), as the page says.
type subscriptionForm struct {
	// Account is the account a subscription is made in (an admin's
	// choice; an account key's own).
	Account string
	Name    string
	URL     string
	// EventTypes are the types, separated by commas, spaces or lines
	// (the values of every event_types input: the boxes checked and the
	// text typed); none is every type.
	EventTypes string
	// Mode is push or pull (create only).
	Mode string
	// RetryPolicy is a retry.Presets name ("": the default on create,
	// the policy as it is on edit).
	RetryPolicy string
	// Headers are "Name: value" lines.
	Headers string
	// DynamicHeaders are "Name: key" lines (the dynamic_headers field).
	DynamicHeaders string
	// The CEL fields, filter_expression and transform
	// (subscription_expressions.go).
	expressions
}

// readSubscriptionForm returns the form's fields of a POST (parsed by
// change).
func readSubscriptionForm(r *http.Request) subscriptionForm {
	f := r.PostForm
	return subscriptionForm{Account: strings.TrimSpace(f.Get("account_id")), Name: f.Get("name"),
		URL: strings.TrimSpace(f.Get("url")), EventTypes: strings.Join(f["event_types"], ","), Mode: f.Get("delivery_mode"),
		RetryPolicy: f.Get("retry_policy"), Headers: f.Get("headers"),
		DynamicHeaders: f.Get("dynamic_headers"), expressions: readExpressions(f)}
}

// formOf is the edit form of sub: its fields as they are (the URL without
// its password, as every page shows it).
func formOf(sub subscription.Subscription) subscriptionForm {
	f := subscriptionForm{Account: account.OrDefault(sub.AccountID), Name: sub.Name, URL: redact.URL(sub.URL),
		EventTypes: strings.Join(sub.EventTypes, ", "), Mode: sub.DeliveryMode, RetryPolicy: presetOf(sub)}
	f.Headers = headerText(sub.Headers)
	f.DynamicHeaders = headerText(sub.Delivery.DynamicHeaders)
	f.expressions = expressionsOf(sub)
	return f
}

// headerText writes h as "Name: value" lines, in name order.
func headerText(h map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		b.WriteString(k + ": " + h[k] + "\n")
	}
	return b.String()
}

// presetOf is the preset sub's retry policy names when it says nothing
// else ({"preset": "…"}), "" when it says more (set through the API).
func presetOf(sub subscription.Subscription) string {
	raw := sub.RetryPolicy
	if len(raw) == 0 {
		raw = json.RawMessage(subscription.DefaultRetryPolicy)
	}
	var spec map[string]json.RawMessage
	var name string
	if json.Unmarshal(raw, &spec) != nil || len(spec) != 1 || json.Unmarshal(spec["preset"], &name) != nil {
		return ""
	}
	return name
}

// types returns the event types typed.
func (f subscriptionForm) types() []string {
	return strings.FieldsFunc(f.EventTypes, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\n' })
}

// headerLines reads the header map typed in the form's field (headers,
// dynamic_headers), one "Name: value" a line (blank lines skipped); a
// line without a colon is a problem of that field.
func headerLines(field, text string) (map[string]string, *strictjson.Error) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &strictjson.Error{Field: field, Detail: "line " + strconv.Itoa(i+1) + ": write each header as Name: value"}
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// retryPolicy is the policy of a preset's name.
func retryPolicy(preset string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"preset": preset})
	return b
}

// createInput is the API's create request of the form: its empty fields
// left out, so they take their defaults.
func (f subscriptionForm) createInput() (subscription.Input, *strictjson.Error) {
	in := subscription.Input{Name: &f.Name}
	if f.URL != "" {
		in.URL = &f.URL
	}
	if f.Mode != "" {
		in.DeliveryMode = &f.Mode
	}
	if types := f.types(); len(types) > 0 {
		in.EventTypes = &types
	}
	if f.RetryPolicy != "" {
		in.RetryPolicy = retryPolicy(f.RetryPolicy)
	}
	h, err := headerLines("headers", f.Headers)
	if err != nil {
		return in, err
	}
	if len(h) > 0 {
		in.Headers = &h
	}
	dh, err := headerLines("dynamic_headers", f.DynamicHeaders)
	if err != nil {
		return in, err
	}
	if len(dh) > 0 {
		in.DynamicHeaders = &dh
	}
	f.expressions.into(&in, expressions{})
	return in, nil
}

// updateInput is the API's update request (PATCH) of the form for cur: the
// fields that differ from cur's, so that those alone change (a URL left as
// shown, its password hidden, keeps its password).
func (f subscriptionForm) updateInput(cur subscription.Subscription) (subscription.Input, *strictjson.Error) {
	var in subscription.Input
	if f.Name != cur.Name {
		in.Name = &f.Name
	}
	if cur.DeliveryMode != subscription.ModePull && f.URL != redact.URL(cur.URL) {
		in.URL = &f.URL
	}
	if types := f.types(); !slices.Equal(types, cur.EventTypes) && len(types)+len(cur.EventTypes) > 0 {
		in.EventTypes = &types
	}
	if f.RetryPolicy != "" && f.RetryPolicy != presetOf(cur) {
		in.RetryPolicy = retryPolicy(f.RetryPolicy)
	}
	h, err := headerLines("headers", f.Headers)
	if err != nil {
		return in, err
	}
	if !maps.Equal(h, cur.Headers) && len(h)+len(cur.Headers) > 0 {
		in.Headers = &h
	}
	dh, err := headerLines("dynamic_headers", f.DynamicHeaders)
	if err != nil {
		return in, err
	}
	if !maps.Equal(dh, cur.Delivery.DynamicHeaders) && len(dh)+len(cur.Delivery.DynamicHeaders) > 0 {
		in.DynamicHeaders = &dh
	}
	f.expressions.into(&in, expressionsOf(cur))
	return in, nil
}

// formProblem is what a form shows of a refused request: the field at
// fault (as the API names it; "" for none) and why.
type formProblem struct {
	Field, Detail string
	status        int
}

// problemOf returns the problem of an error of a subscription write, as
// the API answers it (internal/api/subscriptions.go): 400 for a field's
// value, 422 for a destination refused or fields that do not go together,
// 409 for a name in use or the account's limit; false for any other error
// (the store's).
func problemOf(err error, name string) (formProblem, bool) {
	var ie *strictjson.Error
	var refused *subscription.DestinationError
	var combo *subscription.CombinationError
	var limit *store.SubscriptionLimitError
	var unknown *eventtype.UnknownTypeError
	switch {
	case errors.As(err, &unknown): // settings.catalog_only
		return formProblem{unknown.Field, unknown.Detail, http.StatusUnprocessableEntity}, true
	case errors.As(err, &refused):
		return formProblem{refused.Field, refused.Detail, http.StatusUnprocessableEntity}, true
	case errors.As(err, &combo):
		return formProblem{combo.Field, combo.Detail, http.StatusUnprocessableEntity}, true
	case errors.As(err, &ie):
		return formProblem{ie.Field, ie.Detail, http.StatusBadRequest}, true
	case errors.Is(err, store.ErrNameTaken):
		return formProblem{"name", "a subscription named " + strconv.Quote(name) + " already exists", http.StatusConflict}, true
	case errors.As(err, &limit):
		return formProblem{"", "the account already holds " + strconv.Itoa(limit.Limit) +
			" subscriptions, the most one account may hold (the server's --max-subscriptions-per-account)", http.StatusConflict}, true
	}
	return formProblem{}, false
}

// subscriptionFormView is the create or edit page.
type subscriptionFormView struct {
	// ID is the subscription edited ("" on create); Pull marks a pull
	// subscription's edit (no URL, no headers).
	ID   string
	Pull bool
	Form subscriptionForm
	// Accounts are an admin's choices on create (the first
	// store.MaxLimit); none for an account key.
	Accounts []account.Account
	Presets  []string
	Problem  formProblem
	// Choices are the event types the form offers (typeChoices; none:
	// a text field); CatalogOnly: the account takes catalog types only,
	// so the form offers no field for others.
	Choices     []typeChoice
	CatalogOnly bool
	// Preview is the form's preview (preview.go); sub the subscription
	// edited (nil on create), whose deliveries it offers.
	Preview previewPanel
	sub     *subscription.Subscription
}

// Types is the form's event types field.
func (v subscriptionFormView) Types() typePicker {
	return typePicker{Choices: v.Choices, Checked: v.Form.types(), Problem: v.Problem, Other: !v.CatalogOnly}
}

// Expressions is the form's expressions section (expressionsBlock), whose
// Preview posts the form to the create's or the edit's preview route.
func (v subscriptionFormView) Expressions() expressionsBlock {
	action := "/console/subscriptions/new/preview"
	if v.ID != "" {
		action = "/console/subscriptions/" + v.ID + "/preview"
	}
	return expressionsBlock{expressions: v.Form.expressions, Problem: v.Problem, NoTransform: v.Pull, Preview: v.Preview, Action: action}
}

// Invalid reports whether the problem is the input's (formProblem.Invalid).
func (v subscriptionFormView) Invalid(input string) bool { return v.Problem.Invalid(input) }

// Invalid reports whether the problem is the input's: its field, or a
// part of it (retry_policy.ttl, event_types[2]).
func (p formProblem) Invalid(input string) bool {
	top, _, _ := strings.Cut(p.Field, ".")
	top, _, _ = strings.Cut(top, "[")
	return p.Detail != "" && top == input
}

// For is what the form shows beside the input: the problem's detail
// when it is the input's (with the part of it at fault, such as
// event_types[2]), "" otherwise.
func (p formProblem) For(input string) string {
	if !p.Invalid(input) {
		return ""
	}
	if p.Field != input {
		return p.Field + ": " + p.Detail
	}
	return p.Detail
}

// presets are the retry presets the form offers: every named one but
// custom, whose schedule only the API's retry_policy gives.
func presets() []string {
	return slices.DeleteFunc(retry.Presets(), func(p string) bool { return p == retry.PresetCustom })
}
