package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// The subscription forms' Preview (the console's and the portal's): for
// the form's values, not saved, and one event, whether the subscription
// would take it and what a push of it would carry (catalog.Try, as the
// API's POST /v1/filter-test answers). The event is pasted in the form's
// event box, or one of the choices the form offers: an example of the
// event-type catalog (for the types the form lists, or every type when it
// lists none), or the event of one of the subscription's latest
// deliveries (edit forms only). Nothing is stored or sent.

// Bounds of the preview's choices.
const (
	// previewExamples is the most catalog examples a form offers.
	previewExamples = 50
	// previewDeliveries is the latest deliveries an edit form offers.
	previewDeliveries = 10
	// previewTimeout bounds a preview's evaluation of the expressions
	// (each is bounded by expr's cost limit as well), as the API's.
	previewTimeout = 5 * time.Second
)

// previewPanel is a form's Preview section: the choice of event (From: ""
// for the event box, "example:<type>:<n>" or "delivery:<id>"), the event
// box, the choices offered, and once tried the result, or the problem
// that kept the event from being tried.
type previewPanel struct {
	From, Event string
	Choices     []previewChoice
	Result      *previewResult
	Problem     formProblem
}

// previewChoice is an event the form offers: its value for From and its
// label.
type previewChoice struct{ Value, Label string }

// previewResult is what a preview found (catalog.Verdict): Tried says
// which event, in words; Why the rule that refused it ("" when it
// matches) and Failed the advanced filter's index (-1 for another rule);
// when it matches, Filtered (the transform gave null), TransformError
// (CEL's message) or the push's content type, the delivery schema's
// headers and its body exactly (Base64 when the body is not UTF-8).
type previewResult struct {
	Tried, Why                  string
	Matches                     bool
	Failed                      int
	Filtered                    bool
	TransformError, ContentType string
	Headers                     [][2]string
	Body                        string
	Base64                      bool
}

// readPreview returns the preview section's fields of a form's POST.
func readPreview(f url.Values) previewPanel {
	return previewPanel{From: f.Get("preview_from"), Event: f.Get("preview_event")}
}

// previewer finds a preview's events and tries them: the store's
// deliveries and events, the catalog's examples (nil: none).
type previewer struct {
	store   Store
	catalog EventTypeCatalog
	now     func() time.Time
}

// choices returns the events a form offers for the preview: the examples
// of types (every catalog type when none, at most store.MaxLimit) that
// allow takes, at most previewExamples, then the events of sub's
// previewDeliveries latest deliveries (none when sub is nil).
func (pv previewer) choices(ctx context.Context, types []string, allow func(string) bool, sub *subscription.Subscription) ([]previewChoice, error) {
	var out []previewChoice
	if pv.catalog != nil {
		if len(types) == 0 {
			ts, _, err := pv.catalog.List(ctx, store.EventTypeFilter{}, store.Page{Limit: store.MaxLimit})
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				types = append(types, t.Name)
			}
		}
		for _, name := range types {
			t, err := pv.catalog.Get(ctx, name)
			if errors.Is(err, store.ErrNotFound) || err == nil && !allow(name) {
				continue
			} else if err != nil {
				return nil, err
			}
			for i := range t.Examples {
				if len(out) < previewExamples {
					out = append(out, previewChoice{Value: "example:" + name + ":" + strconv.Itoa(i+1),
						Label: "example " + strconv.Itoa(i+1) + " of " + name})
				}
			}
		}
	}
	if sub == nil {
		return out, nil
	}
	ds, _, err := pv.store.ListDeliveries(ctx, store.DeliveryFilter{AccountID: account.OrDefault(sub.AccountID),
		SubscriptionID: sub.ID, Page: store.Page{Limit: previewDeliveries}})
	for _, d := range ds {
		out = append(out, previewChoice{Value: "delivery:" + d.ID,
			Label: "the event " + d.EventID + " of delivery " + d.ID + " (" + string(d.Status) + ")"})
	}
	return out, err
}

// run tries the panel's event on sub (of the account accountID), setting
// the panel's Result, or its Problem when the event cannot be tried. A
// chosen event is put in the event box, to be edited and tried again;
// From is then "" (the box). An example must be of a type allow takes, a
// delivery sub's. The error is the store's, or the subscription's (one
// whose expressions do not compile).
func (pv previewer) run(ctx context.Context, sub subscription.Subscription, allow func(string) bool, panel *previewPanel) error {
	tried := "the event in the box"
	if panel.From != "" {
		body, what, problem, err := pv.chosen(ctx, panel.From, sub, allow)
		if err != nil || problem != "" {
			panel.Problem = formProblem{Field: "preview_from", Detail: problem}
			return err
		}
		panel.Event, panel.From, tried = body, "", what
	}
	ctx, cancel := context.WithTimeout(ctx, previewTimeout)
	defer cancel()
	v, err := catalog.Try(ctx, sub, account.OrDefault(sub.AccountID), []byte(panel.Event))
	if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
		panel.Problem = formProblem{Field: "preview_event", Detail: fe.Field + ": " + fe.Detail}
		return nil
	}
	if err != nil {
		return err
	}
	panel.Result = resultOf(v)
	panel.Result.Tried = tried
	return nil
}

// chosen returns the event of the choice from as a JSON document, indented,
// and what it is in words; problem says why it cannot be tried (an
// example of a type allow refuses, or gone; a delivery not sub's, or its
// event no longer stored).
func (pv previewer) chosen(ctx context.Context, from string, sub subscription.Subscription, allow func(string) bool) (body, what, problem string, err error) {
	kind, rest, _ := strings.Cut(from, ":")
	switch kind {
	case "example":
		i := strings.LastIndexByte(rest, ':')
		n, aerr := strconv.Atoi(rest[i+1:])
		if i < 0 || aerr != nil || pv.catalog == nil || !allow(rest[:i]) {
			return "", "", "there is no such example", nil
		}
		return pv.example(ctx, rest[:i], n)
	case "delivery":
		return pv.deliveryEvent(ctx, rest, sub)
	}
	return "", "", "choose an example, a delivery, or the event in the box", nil
}

// example returns the n-th example (from 1) of the type name as an event
// of that type (see catalogExample).
func (pv previewer) example(ctx context.Context, name string, n int) (body, what, problem string, err error) {
	t, err := pv.catalog.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) || err == nil && (n < 1 || n > len(t.Examples)) {
		return "", "", "the catalog has no example " + strconv.Itoa(n) + " of " + name, nil
	}
	if err != nil {
		return "", "", "", err
	}
	return catalogExample(name, n, t.Examples[n-1], pv.now()), "example " + strconv.Itoa(n) + " of " + name, "", nil
}

// catalogExample is an event of the type name whose data is the catalog's
// example n: id example-<n>, source /examples, the time at to the second,
// as JSON indented.
func catalogExample(name string, n int, data json.RawMessage, at time.Time) string {
	b, _ := json.MarshalIndent(map[string]any{"specversion": "1.0", "id": fmt.Sprintf("example-%d", n), "source": "/examples",
		"type": name, "time": at.UTC().Truncate(time.Second).Format(time.RFC3339), "datacontenttype": "application/json",
		"data": data}, "", "  ")
	return string(b)
}

// deliveryEvent returns the event of the delivery id, which must be sub's.
func (pv previewer) deliveryEvent(ctx context.Context, id string, sub subscription.Subscription) (body, what, problem string, err error) {
	d, err := pv.store.GetDelivery(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (sub.ID == "" || d.SubscriptionID != sub.ID ||
		account.OrDefault(d.AccountID) != account.OrDefault(sub.AccountID)) {
		return "", "", "this subscription has no delivery " + id, nil
	}
	if err != nil {
		return "", "", "", err
	}
	e, err := pv.store.GetEvent(ctx, d.EventSeq)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", "the event of delivery " + id + " is no longer stored", nil
	}
	if err != nil {
		return "", "", "", err
	}
	body = indentedJSON(e.Payload)
	return body, "the event " + d.EventID + " of delivery " + id, "", nil
}

// indentedJSON is payload indented, as it is when it is not JSON.
func indentedJSON(payload []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, payload, "", "  ") != nil {
		return string(payload)
	}
	return buf.String()
}

// resultOf is what the preview shows of v.
func resultOf(v catalog.Verdict) *previewResult {
	res := &previewResult{Matches: v.Why == "", Why: v.Why, Failed: v.Failed}
	p := v.Delivered
	switch {
	case p == nil:
	case p.TransformError != "":
		res.TransformError = p.TransformError
	case p.Filtered:
		res.Filtered = true
	default:
		res.ContentType, res.Headers = p.Encoded.ContentType, p.Encoded.Header
		if utf8.Valid(p.Encoded.Body) {
			res.Body = string(p.Encoded.Body)
		} else {
			res.Body, res.Base64 = base64.StdEncoding.EncodeToString(p.Encoded.Body), true
		}
	}
	return res
}

// anyType allows every event type's examples (the console's forms).
func anyType(string) bool { return true }
