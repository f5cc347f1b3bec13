package api

import (
	"encoding/json"
	"io"
	"net/http"
)

// writeList answers 200 with one page of a list, in the shape of every list
// response: {"data": [...], "next_cursor": "..."}. It encodes the items one
// at a time straight to w, view making each its resource, and lets go of
// each item once written, so a page is never held in memory twice (as
// items and as JSON) and its JSON never whole: at most one item's. The
// bytes are those json.Encoder writes for the whole list at once.
func writeList[T, V any](w http.ResponseWriter, items []T, next string, view func(T) V) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(noNewline{w})
	if _, err := io.WriteString(w, `{"data":[`); err != nil {
		return // the client went away; the status line is sent
	}
	for i := range items {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return
			}
		}
		if err := enc.Encode(view(items[i])); err != nil {
			return
		}
		var zero T
		items[i] = zero
	}
	if _, err := io.WriteString(w, `],"next_cursor":`); err != nil {
		return
	}
	if err := enc.Encode(next); err != nil {
		return
	}
	_, _ = io.WriteString(w, "}\n")
}

// noNewline drops the newline json.Encoder ends each value with: the only
// newline it writes, as it does not indent and escapes newlines in strings.
type noNewline struct{ w io.Writer }

func (n noNewline) Write(p []byte) (int, error) {
	if len(p) > 0 && p[len(p)-1] == '\n' {
		_, err := n.w.Write(p[:len(p)-1])
		return len(p), err
	}
	return n.w.Write(p)
}
