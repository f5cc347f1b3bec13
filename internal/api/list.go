package api

import (
	"encoding/json"
	"net/http"
)

// writeList answers 200 with one page of a list, in the shape of every list
// response: {"data": [...], "next_cursor": "..."}. It encodes the items one
// at a time straight to w, view making each its resource, and lets go of
// each item once written, so a page is never held in memory twice (as
// items and as JSON) and its JSON never whole: at most one item's.
func writeList[T, V any](w http.ResponseWriter, items []T, next string, view func(T) V) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if _, err := w.Write([]byte(`{"data":[`)); err != nil {
		return
	}
	for i := range items {
		if i > 0 {
			if _, err := w.Write([]byte(",")); err != nil {
				return
			}
		}
		if err := enc.Encode(view(items[i])); err != nil {
			return // the client went away; the status line is sent
		}
		var zero T
		items[i] = zero
	}
	if _, err := w.Write([]byte(`],"next_cursor":`)); err != nil {
		return
	}
	if err := enc.Encode(next); err != nil {
		return
	}
	_, _ = w.Write([]byte("}\n"))
}
