package catalog

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/subscription"
)

// Verdict is what Try finds: Why the subscription would not take the event
// ("" when it would: its type, its subject, the advanced filter that
// failed and how, or its filter_expression), Failed, the index of the
// advanced filter that failed (-1 when another rule failed, or none), and
// when it would take it, what a push of it would carry.
type Verdict struct {
	Why    string
	Failed int
	// Delivered is what a push of the event would carry (nil when the
	// subscription would not take it).
	Delivered *Preview
}

// Preview is what a push of one event would carry, after the
// subscription's transform: the body, its content type and the delivery
// schema's headers (event.Encoded), or Filtered (the transform gave null:
// the delivery would end filtered, nothing sent), or TransformError (the
// transform failed: the delivery would be dead-lettered, reason
// TransformFailed). The body is the push's exactly, but for what differs
// per delivery: a pubsub schema's messageId and publishTime, which are
// "preview" and the time of the trial here.
type Preview struct {
	Filtered       bool
	TransformError string
	Encoded        event.Encoded
}

// Try says whether sub would take the event in body, one CloudEvent as
// JSON (structured mode, as published) of the account accountID (its
// source when it names none, for an Event Grid event), which rule refused
// it if not, and what a push would carry if so. Nothing is published or
// sent, so operational events (source /herald, types herald.*) may be
// tried. The API's filter-test routes (internal/api/filtertest.go) and
// the console's filter test call it. The evaluation of the expressions
// ends with ctx. An event it cannot read is a *event.FieldError naming the
// field ("body" for a body that is not one event); any other error is the
// subscription's (a retry policy, filter or expression that does not
// compile).
func Try(ctx context.Context, sub subscription.Subscription, accountID string, body []byte) (Verdict, error) {
	h := http.Header{"Content-Type": []string{"application/cloudevents+json"}}
	evs, err := event.ParseWith(h, body, event.ParseOptions{DefaultSource: "/accounts/" + accountID, AllowReserved: true})
	var payload []byte
	if err == nil {
		payload, err = evs[0].Marshal()
	}
	if err != nil {
		if fe := (*event.FieldError)(nil); errors.As(err, &fe) {
			return Verdict{}, fe
		}
		return Verdict{}, &event.FieldError{Field: "body", Detail: err.Error(), Index: -1}
	}
	e, err := NewEntry(sub)
	if err != nil {
		return Verdict{}, err
	}
	fev := filter.NewEvent(payload)
	fev.PaceBy(filter.NewPacer(ctx, 0, nil))
	why, failed := e.Explain(evs[0].Type, evs[0].Subject, fev)
	v := Verdict{Why: why, Failed: failed}
	if why == "" {
		v.Delivered, err = e.preview(ctx, payload)
	}
	return v, err
}

// preview is Try's Preview of a push of payload.
func (e *Entry) preview(ctx context.Context, payload []byte) (*Preview, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, skip, err := e.Transformed(ctx, payload)
	switch {
	case TransformCancelled(err):
		return nil, ctx.Err()
	case err != nil:
		return &Preview{TransformError: err.Error()}, nil
	case skip:
		return &Preview{Filtered: true}, nil
	}
	target := event.Target{AccountID: e.AccountID, SubscriptionName: e.Name, Batch: e.Batches()}
	item := event.Item{Payload: p, DeliveryID: "preview", Attempt: 1, PublishedAt: time.Now().UTC()}
	enc, err := event.Encode(e.Schema(), target, []event.Item{item})
	if err != nil {
		return &Preview{TransformError: err.Error()}, nil
	}
	return &Preview{Encoded: enc}, nil
}
