package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/herald-events/herald/internal/strictjson"
)

// maxJSONBody bounds a management request's body.
const maxJSONBody = 1 << 20

// decodeJSON decodes a management body strictly (see strictjson.Decode).
func decodeJSON(data []byte, path string, v any) *strictjson.Error {
	return strictjson.Decode(data, path, v)
}

// decodeBody reads a management request's body, at most 1 MiB, and decodes
// it into v, a pointer to a struct, as decodeJSON does. On a problem it
// answers and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge, Detail: "the body must be at most 1 MiB"})
			return false
		}
		invalid(w, "body", "could not read the body")
		return false
	}
	if err := decodeJSON(body, "", v); err != nil {
		invalid(w, err.Field, err.Detail)
		return false
	}
	return true
}
