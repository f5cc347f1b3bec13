package client

import (
	"context"
	"encoding/json"
	"time"
)

// EventType is a type of the installation's event-type catalog (schema
// EventType): its JSON Schemas by version number ("1", "2", …) and
// examples of its data.
type EventType struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Group       string                     `json:"group"`
	Schemas     map[string]json.RawMessage `json:"schemas"`
	Examples    []json.RawMessage          `json:"examples"`
	Deprecated  bool                       `json:"deprecated"`
	Archived    bool                       `json:"archived"`
	ArchivedAt  *time.Time                 `json:"archived_at"`
	CreatedAt   time.Time                  `json:"created_at"`
	UpdatedAt   time.Time                  `json:"updated_at"`
}

// EventTypeInput is the body of EventTypes.Create and EventTypes.Update
// (schema EventTypeInput): nil fields are left out (on create, their
// default; on update, their value kept). Schemas adds versions; a
// published version never changes.
type EventTypeInput struct {
	Name        *string                    `json:"name,omitempty"`
	Description *string                    `json:"description,omitempty"`
	Group       *string                    `json:"group,omitempty"`
	Schemas     map[string]json.RawMessage `json:"schemas,omitempty"`
	Examples    *[]json.RawMessage         `json:"examples,omitempty"`
	Deprecated  *bool                      `json:"deprecated,omitempty"`
}

// EventTypeListParams are the query of EventTypes.List: Group filters by
// group; IncludeArchived lists archived types too.
type EventTypeListParams struct {
	ListParams
	Group           string
	IncludeArchived bool
}

// EventTypesService calls /v1/event-types: reads with any key, writes with
// admin keys. The catalog is the installation's: these calls send no
// account_id.
type EventTypesService struct{ c *Client }

// Create adds a type (POST /v1/event-types).
func (s *EventTypesService) Create(ctx context.Context, in EventTypeInput) (*EventType, error) {
	return doJSON[EventType](ctx, s.c, call{op: opCreateEventType, body: in})
}

// List returns one page of the catalog (GET /v1/event-types).
func (s *EventTypesService) List(ctx context.Context, p EventTypeListParams) (*Page[EventType], error) {
	q := p.ListParams.values()
	setIf(q, "group", p.Group)
	if p.IncludeArchived {
		q.Set("include_archived", "true")
	}
	return doJSON[Page[EventType]](ctx, s.c, call{op: opListEventTypes, query: q})
}

// Get returns the type name (GET /v1/event-types/{name}).
func (s *EventTypesService) Get(ctx context.Context, name string) (*EventType, error) {
	return doJSON[EventType](ctx, s.c, call{op: opGetEventType, ids: []string{name}})
}

// Update changes the type name or adds schema versions (PATCH
// /v1/event-types/{name}).
func (s *EventTypesService) Update(ctx context.Context, name string, in EventTypeInput) (*EventType, error) {
	return doJSON[EventType](ctx, s.c, call{op: opUpdateEventType, ids: []string{name}, body: in})
}

// Archive archives the type name (DELETE /v1/event-types/{name}); its
// events are still accepted and delivered.
func (s *EventTypesService) Archive(ctx context.Context, name string) (*EventType, error) {
	return doJSON[EventType](ctx, s.c, call{op: opArchiveEventType, ids: []string{name}})
}

// AsyncAPI returns the catalog as an AsyncAPI 3.0 document (GET
// /v1/event-types/asyncapi.json).
func (s *EventTypesService) AsyncAPI(ctx context.Context) (json.RawMessage, error) {
	raw, err := doJSON[json.RawMessage](ctx, s.c, call{op: opGetAsyncAPI})
	if err != nil {
		return nil, err
	}
	return *raw, nil
}
