package catalog

import (
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/subscription"
)

// Verdict is what Try finds: Why the subscription would not take the event
// ("" when it would: its type, its subject, or the advanced filter that
// failed and how), and Failed, the index of the advanced filter that failed
// (-1 when another rule failed, or none).
type Verdict struct {
	Why    string
	Failed int
}

// Try says whether sub would take the event in body, one CloudEvent as
// JSON (structured mode, as published) of the account accountID (its
// source when it names none, for an Event Grid event), and if not which
// rule refused it. Nothing is published, so operational events (source
// /herald, types herald.*) may be tried. The API's filter-test
// (internal/api/filtertest.go) and the console's filter test call it. An
// event it cannot read is a *event.FieldError naming the field ("body"
// for a body that is not one event); any other error is the
// subscription's (a retry policy or filter that does not compile).
func Try(sub subscription.Subscription, accountID string, body []byte) (Verdict, error) {
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
	why, failed := e.Explain(evs[0].Type, evs[0].Subject, filter.NewEvent(payload))
	return Verdict{Why: why, Failed: failed}, nil
}
