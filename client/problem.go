package client

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Problem is an error answer of the API: an RFC 9457 problem document
// (schema Problem in internal/api/openapi.yaml). Every method returns one
// for a non-2xx answer; find it with errors.As:
//
//	var p *client.Problem
//	if errors.As(err, &p) && p.Status == 404 { … }
//
// An answer that is not a problem document (a proxy's HTML page) still
// gives Status, and Title from the status text.
type Problem struct {
	// Type is the problem's URN, "urn:herald:problem:validation" and so on.
	Type string `json:"type"`
	// Title is the short, fixed text of the type ("Invalid request").
	Title string `json:"title"`
	// Status is the answer's HTTP status code.
	Status int `json:"status"`
	// Detail says what is wrong with this request.
	Detail string `json:"detail,omitempty"`
	// Field names the offending input: a JSON path in the body
	// ("retry_policy.max_attempts"), a query parameter ("limit") or a
	// header ("content-type"); empty when the problem has none.
	Field string `json:"field,omitempty"`
	// RetryAfter is the answer's Retry-After (a 503 when the store is
	// away, in seconds or an HTTP date), 0 when it has none.
	RetryAfter time.Duration `json:"-"`
}

// Error says the status, the title, the detail and the field.
func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "herald: %d %s", p.Status, p.Title)
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	if p.Field != "" {
		b.WriteString(" (field " + p.Field + ")")
	}
	return b.String()
}

// readProblem makes the *Problem of a non-2xx answer, reading at most
// maxProblemBytes of its body.
func readProblem(resp *http.Response) *Problem {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBytes))
	p := &Problem{}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil &&
		(mt == "application/problem+json" || mt == "application/json") {
		if json.Unmarshal(body, p) != nil {
			p = &Problem{}
		}
	}
	p.Status = resp.StatusCode
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	p.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return p
}

// retryAfter reads a Retry-After value, seconds or an HTTP date (then
// relative to now); 0 for none or a value of neither form.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// errRepeatedCursor is All's error for a page whose next_cursor is the
// cursor that fetched it (paging would never end).
var errRepeatedCursor = errorString("client: a page's next_cursor is the cursor that fetched it")

// errorString is an error that is a constant string.
type errorString string

func (e errorString) Error() string { return string(e) }
