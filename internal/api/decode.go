package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

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
	body, ok := readJSONBody(w, r)
	return ok && decodeInto(w, body, v)
}

// decodeOptionalBody is decodeBody for a route whose body is optional
// (optionalBody): a body empty or of whitespace only leaves v as it is.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readJSONBody(w, r)
	if !ok {
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	return decodeInto(w, body, v)
}

// readJSONBody reads a management request's body, at most 1 MiB. On a
// problem it answers and returns false.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, Problem{Type: probTooLarge, Title: "Payload too large", Status: http.StatusRequestEntityTooLarge, Detail: "the body must be at most 1 MiB"})
			return nil, false
		}
		bodyReadFailed(w, err, "could not read the body")
		return nil, false
	}
	return body, true
}

// bodyReadFailed answers a body that could not be read (but for being too
// large): 408 when it did not arrive in time (see BodyGrace), else 400
// naming the body, saying detail.
func bodyReadFailed(w http.ResponseWriter, err error, detail string) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		writeProblem(w, Problem{Type: probTimeout, Title: "Request timeout", Status: http.StatusRequestTimeout, Field: "body",
			Detail: fmt.Sprintf("the body did not arrive in time: it must keep arriving at %d KiB/s on average after the first %v, and all of it within 60 s",
				MinBodyRate>>10, BodyGrace)})
		return
	}
	invalid(w, "body", detail)
}

// decodeInto decodes body into v as decodeJSON does; on a problem it
// answers 400 naming the field and returns false.
func decodeInto(w http.ResponseWriter, body []byte, v any) bool {
	if err := decodeJSON(body, "", v); err != nil {
		invalid(w, err.Field, err.Detail)
		return false
	}
	return true
}
