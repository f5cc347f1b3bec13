package control

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
)

// EventTypeStore is what the catalog's writes (and the console's and
// portal's reads, through EventTypes) need of the store.
type EventTypeStore interface {
	EventTypesVersion(ctx context.Context) (int64, error)
	CreateEventType(ctx context.Context, t eventtype.EventType, max int) error
	GetEventType(ctx context.Context, name string) (eventtype.EventType, error)
	ListEventTypes(ctx context.Context, f store.EventTypeFilter, p store.Page) ([]eventtype.EventType, string, error)
	UpdateEventType(ctx context.Context, t eventtype.EventType) error
}

// EventTypeCache is the compiled catalog of this node (eventtype.Catalog):
// Refresh after each write makes it take effect here at once; the other
// nodes refresh within their recheck interval.
type EventTypeCache interface {
	Refresh(ctx context.Context) error
}

// maxUpdateTries bounds how often an event type change is read and made
// again because another write came between.
const maxUpdateTries = 5

// EventTypes carries out writes of the event-type catalog (admin only: the
// caller's to check), and reads it for the console and the portal. It is
// safe for concurrent use.
type EventTypes struct {
	Store EventTypeStore
	Clock clock.Clock
	// Cache, when set, is refreshed after every write.
	Cache EventTypeCache
	// Max bounds the catalog's types (eventtype.MaxEventTypes when 0).
	Max int
}

// written returns err, the result of a write; when the write succeeded it
// first refreshes this node's catalog (a failed refresh is left to the
// next: the write is stored).
func (s *EventTypes) written(ctx context.Context, err error) error {
	if err == nil && s.Cache != nil {
		_ = s.Cache.Refresh(ctx)
	}
	return err
}

// Get reads the type name (store.ErrNotFound).
func (s *EventTypes) Get(ctx context.Context, name string) (eventtype.EventType, error) {
	return s.Store.GetEventType(ctx, name)
}

// Version reads the catalog's version, which every write advances
// (store.EventTypeStore's EventTypesVersion).
func (s *EventTypes) Version(ctx context.Context) (int64, error) {
	return s.Store.EventTypesVersion(ctx)
}

// List reads a page of the catalog (store.EventTypeStore's ListEventTypes).
func (s *EventTypes) List(ctx context.Context, f store.EventTypeFilter, p store.Page) ([]eventtype.EventType, string, error) {
	return s.Store.ListEventTypes(ctx, f, p)
}

func (s *EventTypes) now() time.Time { return s.Clock.Now().UTC().Truncate(time.Millisecond) }

// Create stores the type in makes (eventtype.Input.New, whose error is
// returned). store.ErrNameTaken, a *store.EventTypeLimitError.
func (s *EventTypes) Create(ctx context.Context, in eventtype.Input) (eventtype.EventType, error) {
	t, err := in.New(s.now())
	if err != nil {
		return eventtype.EventType{}, err
	}
	return t, s.written(ctx, s.Store.CreateEventType(ctx, t, cmp.Or(s.Max, eventtype.MaxEventTypes)))
}

// Update reads the type, lets change modify it (its error is returned and
// nothing written), and stores it at its next revision; when another
// write came between, it reads and changes it again. store.ErrNotFound.
func (s *EventTypes) Update(ctx context.Context, name string, change func(*eventtype.EventType, time.Time) error) (eventtype.EventType, error) {
	for try := 1; ; try++ {
		t, err := s.Store.GetEventType(ctx, name)
		if err != nil {
			return eventtype.EventType{}, err
		}
		if err := change(&t, s.now()); err != nil {
			return eventtype.EventType{}, err
		}
		t.Revision++
		err = s.Store.UpdateEventType(ctx, t)
		if errors.Is(err, store.ErrConflict) && try < maxUpdateTries {
			continue
		}
		return t, s.written(ctx, err)
	}
}

// Archive archives the type (it stays deliverable; see
// eventtype.EventType.ArchivedAt); archiving an archived type changes
// nothing. store.ErrNotFound.
func (s *EventTypes) Archive(ctx context.Context, name string) (eventtype.EventType, error) {
	return s.Update(ctx, name, func(t *eventtype.EventType, now time.Time) error {
		if !t.Archived() {
			t.ArchivedAt, t.UpdatedAt = now, now
		}
		return nil
	})
}
