package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// PublishResponse is the answer to a publish (schema PublishResponse):
// one result per event, in request order.
type PublishResponse struct {
	Events []PublishResult `json:"events"`
}

// PublishResult is one published event's outcome (schema PublishResult):
// Duplicate when its account, source and id were published before, and
// the deliveries it made.
type PublishResult struct {
	ID         string `json:"id"`
	Source     string `json:"source"`
	Duplicate  bool   `json:"duplicate"`
	Deliveries int    `json:"deliveries"`
	// SchemaErrors are how the event breaks its type's schema, when its
	// account's schema_validation is "warn".
	SchemaErrors []SchemaViolation `json:"schema_errors,omitempty"`
}

// SchemaViolation is one way an event's data breaks its type's schema
// (schema SchemaViolation): the JSON pointer of the member in the data,
// the schema keyword that failed, and the validator's message.
type SchemaViolation struct {
	Pointer string `json:"pointer"`
	Keyword string `json:"keyword"`
	Message string `json:"message"`
}

// RawPublish is a publish body sent as it is (docs/publishing.md): a
// structured CloudEvent ("application/cloudevents+json"), a batch
// ("application/cloudevents-batch+json"), Event Grid events
// ("application/json"), or binary mode, the event's data with its
// attributes in ce-* headers and its datacontenttype as ContentType.
type RawPublish struct {
	ContentType string
	// Header holds extra headers: ce-id, ce-source, ce-type, … in binary
	// mode.
	Header http.Header
	Body   []byte
}

// EventsService calls POST /v1/events.
type EventsService struct{ c *Client }

// Publish publishes one event in structured mode (POST /v1/events,
// application/cloudevents+json).
func (s *EventsService) Publish(ctx context.Context, e Event) (*PublishResponse, error) {
	data, err := json.Marshal(e.withSpecVersion())
	if err != nil {
		return nil, err
	}
	return s.PublishRaw(ctx, RawPublish{ContentType: "application/cloudevents+json", Body: data})
}

// PublishBatch publishes events in one request (POST /v1/events,
// application/cloudevents-batch+json); all are stored or none.
func (s *EventsService) PublishBatch(ctx context.Context, events []Event) (*PublishResponse, error) {
	batch := make([]Event, len(events))
	for i, e := range events {
		batch[i] = e.withSpecVersion()
	}
	data, err := json.Marshal(batch)
	if err != nil {
		return nil, err
	}
	return s.PublishRaw(ctx, RawPublish{ContentType: "application/cloudevents-batch+json", Body: data})
}

// PublishRaw publishes r's body with its content type and headers (POST
// /v1/events).
func (s *EventsService) PublishRaw(ctx context.Context, r RawPublish) (*PublishResponse, error) {
	if r.ContentType == "" {
		return nil, errors.New("client: PublishRaw: no ContentType")
	}
	return doJSON[PublishResponse](ctx, s.c, call{op: opPublish, raw: &rawBody{r.ContentType, r.Body}, header: r.Header})
}
