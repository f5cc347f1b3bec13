package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// The event-type catalog (docs/event-types.md): installation-wide,
// written with admin keys (control.EventTypes), read with any key.

// The list's filters.
var (
	groupFilter    = param{name: "group"}
	archivedFilter = param{name: "include_archived", values: []string{"true", "false"}}
)

// eventTypeJSON is the event type resource.
type eventTypeJSON struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Group       string                     `json:"group"`
	Schemas     map[string]json.RawMessage `json:"schemas"`
	Examples    []json.RawMessage          `json:"examples"`
	Deprecated  bool                       `json:"deprecated"`
	Archived    bool                       `json:"archived"`
	ArchivedAt  *Time                      `json:"archived_at"`
	CreatedAt   Time                       `json:"created_at"`
	UpdatedAt   Time                       `json:"updated_at"`
}

func toEventTypeJSON(t eventtype.EventType) eventTypeJSON {
	schemas := make(map[string]json.RawMessage, len(t.Schemas))
	for v, raw := range t.Schemas {
		schemas[strconv.Itoa(v)] = raw
	}
	exs := t.Examples
	if exs == nil {
		exs = []json.RawMessage{}
	}
	return eventTypeJSON{Name: t.Name, Description: t.Description, Group: t.Group, Schemas: schemas, Examples: exs,
		Deprecated: t.Deprecated, Archived: t.Archived(), ArchivedAt: optTime(t.ArchivedAt),
		CreatedAt: timestamp(t.CreatedAt), UpdatedAt: timestamp(t.UpdatedAt)}
}

func (s *Server) createEventType(w http.ResponseWriter, r *http.Request) {
	var in eventtype.Input
	if !decodeBody(w, r, &in) {
		return
	}
	t, err := s.EventTypes.Create(r.Context(), in)
	if err != nil {
		s.eventTypeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/event-types/"+url.PathEscape(t.Name))
	writeJSON(w, http.StatusCreated, toEventTypeJSON(t))
}

func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	f := store.EventTypeFilter{Group: groupFilter.in(r), IncludeArchived: archivedFilter.in(r) == "true"}
	ts, next, err := s.Store.ListEventTypes(r.Context(), f, p)
	if err != nil {
		s.storeError(w, r, err, "event type")
		return
	}
	writeList(w, ts, next, toEventTypeJSON)
}

func (s *Server) getEventType(w http.ResponseWriter, r *http.Request) {
	t, err := s.Store.GetEventType(r.Context(), r.PathValue("name"))
	if err != nil {
		s.eventTypeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toEventTypeJSON(t))
}

// updateEventType changes a type: its description, group, examples and
// deprecation, and new schema versions (a published one never changes:
// 409 naming it).
func (s *Server) updateEventType(w http.ResponseWriter, r *http.Request) {
	var in eventtype.Input
	if !decodeBody(w, r, &in) {
		return
	}
	t, err := s.EventTypes.Update(r.Context(), r.PathValue("name"), func(t *eventtype.EventType, now time.Time) error {
		return in.Apply(t, now)
	})
	if err != nil {
		s.eventTypeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toEventTypeJSON(t))
}

// archiveEventType archives a type (DELETE): it is listed only on request,
// and its events are still accepted and delivered.
func (s *Server) archiveEventType(w http.ResponseWriter, r *http.Request) {
	t, err := s.EventTypes.Archive(r.Context(), r.PathValue("name"))
	if err != nil {
		s.eventTypeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toEventTypeJSON(t))
}

// asyncAPI answers the catalog, archived types included, as an AsyncAPI
// 3.0 document (eventtype.AsyncAPI) whose info.version is the catalog's
// version: encoded once per version and shared by every request
// (asyncAPIDocument).
func (s *Server) asyncAPI(w http.ResponseWriter, r *http.Request) {
	body, err := s.asyncAPIDoc.get(r.Context(), s.Store)
	if err != nil {
		s.storeError(w, r, err, "event types")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// asyncAPIDocument is the AsyncAPI document encoded, as of one catalog
// version. The document holds the whole catalog (up to
// eventtype.MaxCatalogBytes and its wrapping): built per request, as many
// copies as there are requests would be in memory at once, from any key.
type asyncAPIDocument struct {
	mu      sync.Mutex // one build at a time; the others wait for it
	version int64
	body    []byte
}

// get returns the document as of the store's catalog version now,
// building it when the version moved since the last one built.
func (d *asyncAPIDocument) get(ctx context.Context, st Store) ([]byte, error) {
	v, err := st.EventTypesVersion(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.body != nil && d.version == v {
		return d.body, nil
	}
	ts, err := st.AllEventTypes(ctx)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(eventtype.AsyncAPI(ts, strconv.FormatInt(v, 10)))
	if err != nil {
		return nil, err
	}
	d.version, d.body = v, append(body, '\n')
	return d.body, nil
}

// catalogBytesDetail says why a write that would make the catalog's types
// take more than limit bytes together is refused (the console's form says
// it too).
func catalogBytesDetail(limit int) string {
	return "the catalog's types would take more than " + strconv.Itoa(limit>>20) +
		" MiB together (descriptions, groups, schemas and examples, archived types included); nothing was changed"
}

// eventTypeError answers an event type write's or read's error.
func (s *Server) eventTypeError(w http.ResponseWriter, r *http.Request, err error) {
	var ie *eventtype.ImmutableError
	var je *strictjson.Error
	var le *store.EventTypeLimitError
	switch {
	case errors.As(err, &ie):
		conflict(w, ie.Field(), ie.Error())
	case errors.As(err, &je):
		invalid(w, je.Field, je.Detail)
	case errors.Is(err, store.ErrNameTaken):
		conflict(w, "name", "an event type of this name exists (archived types too: names are never reused)")
	case errors.As(err, &le) && le.Bytes > 0:
		writeProblem(w, Problem{Type: probLimit, Title: "Limit reached", Status: http.StatusConflict, Field: "schemas",
			Detail: catalogBytesDetail(le.Bytes)})
	case errors.As(err, &le):
		writeProblem(w, Problem{Type: probLimit, Title: "Limit reached", Status: http.StatusConflict, Field: "name",
			Detail: "the catalog holds " + strconv.Itoa(le.Limit) + " event types, the most it may hold; archived types count too"})
	case errors.Is(err, store.ErrNotFound):
		writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "name",
			Detail: "no event type " + quoteHeader(r.PathValue("name")) + " in the catalog (GET /v1/event-types lists them)"})
	default:
		s.storeError(w, r, err, "event type")
	}
}
