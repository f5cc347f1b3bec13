package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// The event-type catalog (store.EventTypeStore).
//
// Every write runs in a write transaction of its own (eventTypeWrite) that
// first takes the event types version's lock (qLockEventTypes: on
// PostgreSQL the counter's row, held until the transaction ends; on
// SQLite the one writer), makes its checks (the name free, the count under
// the limit, the revision read), writes, and last advances the version.
var (
	// qLockEventTypes reads the event types version, locking it until the
	// transaction ends (PostgreSQL: FOR UPDATE).
	qLockEventTypes = query("LockEventTypes")
	// qBumpEventTypes advances the event types version.
	qBumpEventTypes = query("BumpEventTypes")
	// qEventTypesVersion reads the event types version.
	qEventTypesVersion = query("EventTypesVersion")
	// qCountEventTypes counts the event types.
	qCountEventTypes = query("CountEventTypes")
	// qSizeOfOtherEventTypes sums the bytes of every type but the one
	// named $1 (catalogRoom).
	qSizeOfOtherEventTypes = query("SizeOfOtherEventTypes")
	// qInsertEventType inserts a type (eventTypeValues), nothing when its
	// name is stored.
	qInsertEventType = query("InsertEventType")
	// qGetEventType reads the type named $1 (eventTypeCols).
	qGetEventType = query("GetEventType")
	// qGetEventTypeRevision reads the revision of the type named $1.
	qGetEventTypeRevision = query("GetEventTypeRevision")
	// qUpdateEventType writes the type named $1: its description ($2),
	// group, schemas, examples, deprecation, archive time, updated_at and
	// revision ($9), when its revision is $10.
	qUpdateEventType = query("UpdateEventType")
	// qAllEventTypes reads every type in name order.
	qAllEventTypes = query("AllEventTypes")
	// qListEventTypeSizes and qListEventTypes are the list's page
	// (readPage): the types of group $1 ('' for all), archived ones only
	// when $2, after the name $3, in name order, with the LIMIT $4.
	qListEventTypeSizes = query("ListEventTypeSizes")
	qListEventTypes     = query("ListEventTypes")
)

// eventTypeWrite runs fn in a write transaction after taking the event
// types version's lock, and advances the version once fn returns nil.
func (s *Store) eventTypeWrite(ctx context.Context, fn func(x driver.Executor) error) error {
	return s.write(ctx, func(x driver.Executor) error {
		var v int64
		if err := x.QueryRow(ctx, qLockEventTypes).Scan(&v); err != nil {
			return fmt.Errorf("lock the event types version: %w", err)
		}
		if err := fn(x); err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qBumpEventTypes); err != nil {
			return fmt.Errorf("advance the event types version: %w", err)
		}
		return nil
	})
}

// EventTypesVersion implements store.EventTypeStore.
func (s *Store) EventTypesVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.drv.Reader().QueryRow(ctx, qEventTypesVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the event types version: %w", err)
	}
	return v, nil
}

// CreateEventType implements store.EventTypeStore: the limit is checked
// first (before anything is written), then the name (the insert writes
// nothing when it is taken).
func (s *Store) CreateEventType(ctx context.Context, t eventtype.EventType, max int) error {
	args, err := eventTypeValues(&t)
	if err != nil {
		return err
	}
	return s.eventTypeWrite(ctx, func(x driver.Executor) error {
		var n int
		if err := x.QueryRow(ctx, qCountEventTypes).Scan(&n); err != nil {
			return fmt.Errorf("count the event types: %w", err)
		}
		if max > 0 && n >= max {
			return &store.EventTypeLimitError{Limit: max}
		}
		if err := catalogRoom(ctx, x, args); err != nil {
			return err
		}
		switch n, err := x.Exec(ctx, qInsertEventType, args...); {
		case err != nil:
			return fmt.Errorf("insert event type %q: %w", t.Name, err)
		case n == 0:
			return fmt.Errorf("event type %q: %w", t.Name, store.ErrNameTaken)
		}
		return nil
	})
}

// GetEventType implements store.EventTypeStore.
func (s *Store) GetEventType(ctx context.Context, name string) (eventtype.EventType, error) {
	t, err := scanEventType(s.drv.Reader().QueryRow(ctx, qGetEventType, name))
	if errors.Is(err, driver.ErrNoRows) {
		return eventtype.EventType{}, fmt.Errorf("event type %q: %w", name, store.ErrNotFound)
	}
	return t, err
}

// ListEventTypes implements store.EventTypeStore: each page a seek of the
// primary key (or of event_types_group for a group).
func (s *Store) ListEventTypes(ctx context.Context, f store.EventTypeFilter, p store.Page) ([]eventtype.EventType, string, error) {
	if err := store.EventTypeCursorCheck(p.Cursor); err != nil {
		return nil, "", err
	}
	args := []any{f.Group, f.IncludeArchived, p.Cursor}
	return readPage(ctx, s, p, qListEventTypeSizes, qListEventTypes, args, scanEventType,
		func(t eventtype.EventType) string { return t.Name })
}

// AllEventTypes implements store.EventTypeStore, in one snapshot.
func (s *Store) AllEventTypes(ctx context.Context) ([]eventtype.EventType, error) {
	var out []eventtype.EventType
	err := s.drv.Snapshot(ctx, func(x driver.Executor) error {
		out = nil
		return x.Query(ctx, qAllEventTypes, func(r driver.Row) error {
			t, err := scanEventType(r)
			out = append(out, t)
			return err
		})
	})
	return out, err
}

// UpdateEventType implements store.EventTypeStore.
func (s *Store) UpdateEventType(ctx context.Context, t eventtype.EventType) error {
	args, err := eventTypeValues(&t)
	if err != nil {
		return err
	}
	return s.eventTypeWrite(ctx, func(x driver.Executor) error {
		var rev int64
		switch err := x.QueryRow(ctx, qGetEventTypeRevision, t.Name).Scan(&rev); {
		case errors.Is(err, driver.ErrNoRows):
			return fmt.Errorf("event type %q: %w", t.Name, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("read event type %q: %w", t.Name, err)
		case rev != t.Revision-1:
			return fmt.Errorf("event type %q is at revision %d, not %d: %w", t.Name, rev, t.Revision-1, store.ErrConflict)
		}
		if err := catalogRoom(ctx, x, args); err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qUpdateEventType, args[0], args[1], args[2], args[3], args[4], args[5], args[6],
			args[8], args[9], t.Revision-1); err != nil {
			return fmt.Errorf("update event type %q: %w", t.Name, err)
		}
		return nil
	})
}

// catalogRoom returns a *store.EventTypeLimitError (its Bytes set) when
// the type of the column values args (eventTypeValues) and every other
// type together would take more than eventtype.MaxCatalogBytes, as
// stored: its description, group, schemas and examples.
func catalogRoom(ctx context.Context, x driver.Executor, args []any) error {
	var others int64
	if err := x.QueryRow(ctx, qSizeOfOtherEventTypes, args[0]).Scan(&others); err != nil {
		return fmt.Errorf("size the event types: %w", err)
	}
	size := 0
	for _, a := range args[1:5] {
		size += len(a.(string))
	}
	if others+int64(size) > eventtype.MaxCatalogBytes {
		return &store.EventTypeLimitError{Bytes: eventtype.MaxCatalogBytes}
	}
	return nil
}

// eventTypeCols are the columns scanEventType reads and eventTypeValues
// writes, in order: name, description, grp, schemas (a JSON object of
// version numbers), examples (a JSON array), deprecated, archived_at,
// created_at, updated_at (Unix milliseconds, 0 for none), revision.

// eventTypeValues returns t's column values (eventTypeCols).
func eventTypeValues(t *eventtype.EventType) ([]any, error) {
	schemas, err := encodeJSON(t.Schemas)
	if err != nil {
		return nil, err
	}
	examples, err := encodeJSON(t.Examples)
	if err != nil {
		return nil, err
	}
	return []any{t.Name, t.Description, t.Group, schemas, examples, t.Deprecated, sqlrow.UnixMS(t.ArchivedAt),
		sqlrow.UnixMS(t.CreatedAt), sqlrow.UnixMS(t.UpdatedAt), t.Revision}, nil
}

// encodeJSON is v as JSON text, not escaping HTML characters (a schema is
// stored as sent, compacted: its version's bytes are compared when sent
// again).
func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// scanEventType reads eventTypeCols.
func scanEventType(r sqlrow.RowScanner) (eventtype.EventType, error) {
	var t eventtype.EventType
	var schemas, examples string
	var archived, created, updated int64
	if err := r.Scan(&t.Name, &t.Description, &t.Group, &schemas, &examples, &t.Deprecated, &archived,
		&created, &updated, &t.Revision); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(schemas), &t.Schemas); err != nil {
		return t, fmt.Errorf("event type %q: schemas: %w", t.Name, err)
	}
	if err := json.Unmarshal([]byte(examples), &t.Examples); err != nil {
		return t, fmt.Errorf("event type %q: examples: %w", t.Name, err)
	}
	if t.Schemas == nil {
		t.Schemas = map[int]json.RawMessage{}
	}
	t.ArchivedAt, t.CreatedAt, t.UpdatedAt = sqlrow.FromUnixMS(archived), sqlrow.FromUnixMS(created), sqlrow.FromUnixMS(updated)
	return t, nil
}
