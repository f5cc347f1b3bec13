package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/herald-events/herald/internal/eventtype"
)

// catalogStore is a Store of an event-type catalog at a version, counting
// its reads of the types (the rest of Store is not used).
type catalogStore struct {
	Store
	version atomic.Int64
	reads   atomic.Int32
}

func (c *catalogStore) EventTypesVersion(context.Context) (int64, error) {
	return c.version.Load(), nil
}
func (c *catalogStore) AllEventTypes(context.Context) ([]eventtype.EventType, error) {
	c.reads.Add(1)
	return []eventtype.EventType{{Name: "invoice.paid", Schemas: map[int]json.RawMessage{1: json.RawMessage(`{"type":"object"}`)}}}, nil
}

// TestAsyncAPIDocumentIsSharedPerVersion: the AsyncAPI document (the whole
// catalog, up to 16 MiB) is built once per catalog version and shared by
// the requests that follow, not built again for each; a catalog write
// (the version moves) builds it again.
func TestAsyncAPIDocumentIsSharedPerVersion(t *testing.T) {
	st := &catalogStore{}
	st.version.Store(7)
	s := &Server{Store: st}
	get := func() map[string]any {
		rec := httptest.NewRecorder()
		s.asyncAPI(rec, httptest.NewRequest("GET", "/v1/event-types/asyncapi.json", nil))
		var doc map[string]any
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			t.Fatalf("GET asyncapi.json: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		return doc
	}
	for range 5 {
		if v := get()["info"].(map[string]any)["version"]; v != "7" {
			t.Fatalf("info.version %v; want 7", v)
		}
	}
	if n := st.reads.Load(); n != 1 {
		t.Fatalf("5 requests at one catalog version read the catalog %d times; want 1", n)
	}
	st.version.Store(8)
	if v := get()["info"].(map[string]any)["version"]; v != "8" || st.reads.Load() != 2 {
		t.Fatalf("after a catalog write: info.version %v, %d reads; want 8, 2", v, st.reads.Load())
	}
}
