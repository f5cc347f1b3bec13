package admission

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/strictjson"
)

// Test events: what POST /v1/subscriptions/{id}/test sends one subscription
// (PublishTo) to try its endpoint.
const (
	// TestSource is every test event's source. It lies under
	// event.ReservedSource, which clients cannot publish, so a receiver
	// can tell a test event from a published one by it.
	TestSource = event.ReservedSource + "/test"
	// TestType is a test event's type unless another is asked for.
	TestType = "herald.test"
)

// NewTestEvent returns a test event for the subscription subID: a
// CloudEvent 1.0 with source TestSource, a fresh id ("evt_…"), time now,
// type typ and data, as application/json. data must be a JSON object;
// empty or null, it is a small example naming the subscription. A type
// that is not a valid CloudEvents type (empty, over event.MaxTypeLen
// bytes, a control character), or data that is not an object, is a
// *event.FieldError naming "type" or "data".
func NewTestEvent(subID, typ string, data json.RawMessage, now time.Time) (event.Event, error) {
	if typ == "" {
		return event.Event{}, &event.FieldError{Field: "type", Detail: `must not be empty: leave it out for "` + TestType + `", or name an event type such as "order.created"`, Index: -1}
	}
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || string(data) == "null":
		data, _ = json.Marshal(map[string]string{
			"message":         "A test event sent by Herald to subscription " + subID,
			"subscription_id": subID,
		})
	case data[0] != '{':
		return event.Event{}, &event.FieldError{Field: "data", Detail: "must be a JSON object, not " + strictjson.KindOf(data), Index: -1}
	}
	ev := event.Event{
		SpecVersion: event.SpecVersion, ID: ids.New("evt_", now), Source: TestSource, Type: typ,
		DataContentType: "application/json", Time: now.UTC(), Data: data,
	}
	if err := ev.Validate(); err != nil {
		return event.Event{}, err // the type's, or the data's (all else is Herald's own)
	}
	return ev, nil
}
