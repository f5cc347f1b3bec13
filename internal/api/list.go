package api

import (
	"encoding/json"
	"io"
	"net/http"
)

// writeList answers 200 with one page of a list, in the shape of every list
// response: {"data": [...], "next_cursor": "..."}, the items written by
// writeItems. The bytes are those json.Encoder writes for the whole list
// at once.
func writeList[T, V any](w http.ResponseWriter, items []T, next string, view func(T) V) {
	enc, ok := writeItems(w, "data", true, items, view)
	if !ok {
		return
	}
	if _, err := io.WriteString(w, `,"next_cursor":`); err != nil {
		return
	}
	if err := enc.Encode(next); err != nil {
		return
	}
	_, _ = io.WriteString(w, "}\n")
}

// writeItems answers 200 with the start of an object whose member (named
// member: "data" in Herald's lists) is items: `{"data":[...]`, for the caller to add its other members and
// the closing brace with the encoder it returns (ok is false when the
// client went away: the status line is sent, and nothing more should be).
// It encodes the items one at a time straight to w, view making each its
// resource, and lets go of each item once written, so a page is never
// held in memory twice (as items and as JSON) and its JSON never whole: at
// most one item's. With escapeHTML false it writes <, > and & as they are
// (json.Encoder.SetEscapeHTML), so a json.RawMessage member goes out no
// larger than it is (compacted): what a receive answer needs to keep to
// its bound of bytes.
func writeItems[T, V any](w http.ResponseWriter, member string, escapeHTML bool, items []T, view func(T) V) (*json.Encoder, bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(noNewline{w})
	enc.SetEscapeHTML(escapeHTML)
	if _, err := io.WriteString(w, `{"`+member+`":[`); err != nil {
		return nil, false
	}
	for i := range items {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return nil, false
			}
		}
		if err := enc.Encode(view(items[i])); err != nil {
			return nil, false
		}
		var zero T
		items[i] = zero
	}
	_, err := io.WriteString(w, "]")
	return enc, err == nil
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
