package store

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/eventtype"
)

// EventTypeStore keeps the installation's event-type catalog
// (internal/eventtype). Every write runs in a transaction of its own that
// first locks the event types version, and then advances it, so that a
// process caching the catalog (eventtype.Catalog) learns of any change,
// on any node, by reading one number.
type EventTypeStore interface {
	// CreateEventType inserts t. ErrNameTaken when a type of its name
	// exists (archived or not); a *EventTypeLimitError when the catalog
	// already holds max types (0: no limit), counted under the lock.
	CreateEventType(ctx context.Context, t eventtype.EventType, max int) error
	// GetEventType returns one type by name, or ErrNotFound.
	GetEventType(ctx context.Context, name string) (eventtype.EventType, error)
	// ListEventTypes returns a page of the types f selects in name order
	// after the cursor (the name of the last item of the page before:
	// EventTypeCursorCheck). An item's bytes (MaxPageBytes): its
	// description, group, schemas and examples.
	ListEventTypes(ctx context.Context, f EventTypeFilter, p Page) ([]eventtype.EventType, string, error)
	// AllEventTypes returns every type, archived ones included, in name
	// order (at most eventtype.MaxEventTypes).
	AllEventTypes(ctx context.Context) ([]eventtype.EventType, error)
	// UpdateEventType replaces the stored type of t's name when it is
	// still at revision t.Revision-1 (t.Revision is the one written): its
	// description, group, schemas, examples, deprecation, archive time and
	// UpdatedAt. ErrNotFound when absent; ErrConflict when another write
	// came between (nothing is written: read it again).
	UpdateEventType(ctx context.Context, t eventtype.EventType) error
	// EventTypesVersion returns the number every event type write
	// advances.
	EventTypesVersion(ctx context.Context) (int64, error)
}

// EventTypeFilter selects the event types a list shows.
type EventTypeFilter struct {
	// Group, when not empty, is the only group listed.
	Group string
	// IncludeArchived lists archived types too.
	IncludeArchived bool
}

// EventTypeCursorCheck checks the format of the event type list's cursors:
// a type's name (valid UTF-8 of at most 256 bytes).
func EventTypeCursorCheck(cursor string) error {
	if len(cursor) > 256 || !utf8.ValidString(cursor) {
		return fmt.Errorf("cursor is not an event type's name: %w", ErrInvalidCursor)
	}
	return nil
}

// ErrEventTypeLimit: CreateEventType found the catalog holding as many
// types as allowed, or a write found the types would take more bytes
// than allowed. The call wrote nothing; an *EventTypeLimitError says the
// limit.
var ErrEventTypeLimit = errors.New("the catalog holds as many event types as allowed")

// EventTypeLimitError is the ErrEventTypeLimit CreateEventType returns:
// Limit, the most types; or, when Bytes is set, the most bytes the types
// may take together (eventtype.MaxCatalogBytes), which CreateEventType
// and UpdateEventType return.
type EventTypeLimitError struct{ Limit, Bytes int }

func (e *EventTypeLimitError) Error() string {
	if e.Bytes > 0 {
		return fmt.Sprintf("the catalog's types would take more than %d bytes together", e.Bytes)
	}
	return fmt.Sprintf("%v (%d)", ErrEventTypeLimit, e.Limit)
}

// Is makes errors.Is(err, ErrEventTypeLimit) true.
func (e *EventTypeLimitError) Is(target error) bool { return target == ErrEventTypeLimit }
