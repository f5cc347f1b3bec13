package eventtype

import (
	"encoding/json"
	"fmt"

	"github.com/herald-events/herald/internal/strictjson"
)

// Bounds of an event's stored schema errors (StoredErrors).
const (
	// MaxStoredErrorBytes bounds the JSON of one event's stored schema
	// errors, the truncation marker included.
	MaxStoredErrorBytes = 4096
	// maxStoredMessage bounds one stored violation's message, and
	// maxStoredPointer its pointer, in bytes (longer: cut, ending in "…").
	maxStoredMessage = 512
	maxStoredPointer = 256
)

// KeywordTruncated is the keyword of the last stored schema error when
// some were left out (StoredErrors): its message says how many.
const KeywordTruncated = "truncated"

// StoredErrors returns vs as the event keeps them (store.NewEvent's
// SchemaErrors): a JSON array of violations, at most MaxViolations of
// them and MaxStoredErrorBytes in all, each message cut at 512 bytes and
// each pointer at 256 (ending in "…"). When not all of vs fit, the
// array's last entry has the keyword "truncated" (KeywordTruncated) and
// says how many were left out. Nil for none: nothing is stored.
func StoredErrors(vs []Violation) []byte {
	if len(vs) == 0 {
		return nil
	}
	const room = MaxStoredErrorBytes - 160 // for the marker: a short message, two short fields
	out := []byte{'['}
	kept := 0
	for _, v := range vs[:min(len(vs), MaxViolations)] {
		v.Pointer, v.Message = cut(v.Pointer, maxStoredPointer), cut(v.Message, maxStoredMessage)
		one, err := json.Marshal(v)
		if err != nil || len(out)+len(one)+2 > room {
			break
		}
		if kept > 0 {
			out = append(out, ',')
		}
		out = append(out, one...)
		kept++
	}
	if left := len(vs) - kept; left > 0 {
		if kept > 0 {
			out = append(out, ',')
		}
		marker, _ := json.Marshal(Violation{Keyword: KeywordTruncated,
			Message: fmt.Sprintf("%d more violations not kept (an event keeps at most %d, in %d bytes)", left, MaxViolations, MaxStoredErrorBytes)})
		out = append(out, marker...)
	}
	return append(out, ']')
}

// cut returns s when it has at most n bytes, else its first bytes (whole
// runes) and "…", n bytes at most.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strictjson.Cut(s, n-len("…")) + "…"
}
