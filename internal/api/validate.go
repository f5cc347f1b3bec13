package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on subscription fields.
const (
	maxNameLen                 = 200
	maxURLLen                  = 2048
	maxEventTypes              = 100
	maxEventTypeLen            = 256
	maxSubjectFilter           = 1024
	maxHeaders                 = 10   // Event Grid's limit on custom delivery headers
	maxHeaderValue             = 4096 // Event Grid's limit on a header value, in bytes
	minTimeout                 = 100 * time.Millisecond
	maxTimeout                 = 5 * time.Minute
	defaultSubscriptionTimeout = 30 * time.Second // Event Grid's response timeout
	maxJSONBody                = 1 << 20
)

// reservedHeaders are set by Herald on every attempt and cannot be overridden
// by a subscription's custom headers.
var reservedHeaders = map[string]bool{
	"content-type": true, "content-length": true, "host": true, "user-agent": true,
	"transfer-encoding": true, "connection": true, "te": true, "trailer": true, "upgrade": true,
	"webhook-id": true, "webhook-timestamp": true, "webhook-signature": true,
}

func checkName(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "name must not be empty"
	case len(s) > maxNameLen:
		return fmt.Sprintf("name must be at most %d bytes", maxNameLen)
	case !utf8.ValidString(s):
		return "name must be valid UTF-8"
	}
	return ""
}

func checkURL(s string) string {
	if len(s) > maxURLLen {
		return fmt.Sprintf("url must be at most %d bytes", maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "url must be an absolute http or https URL, such as https://example.com/hook"
	}
	if u.Fragment != "" {
		return "url must not have a fragment"
	}
	return ""
}

func checkEventTypes(ts []string) (string, string) {
	if len(ts) > maxEventTypes {
		return "event_types", fmt.Sprintf("at most %d event types", maxEventTypes)
	}
	seen := map[string]bool{}
	for i, t := range ts {
		f := fmt.Sprintf("event_types[%d]", i)
		switch {
		case t == "":
			return f, "an event type must not be empty"
		case len(t) > maxEventTypeLen:
			return f, fmt.Sprintf("an event type must be at most %d bytes", maxEventTypeLen)
		case seen[t]:
			return f, "duplicate event type " + t
		}
		seen[t] = true
	}
	return "", ""
}

func checkTimeout(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Sprintf("%q is not a duration such as \"30s\"", s)
	}
	if d < minTimeout || d > maxTimeout {
		return 0, fmt.Sprintf("timeout must be from %s to %s", minTimeout, maxTimeout)
	}
	return d, ""
}

func checkHeaders(h map[string]string) (string, string) {
	if len(h) > maxHeaders {
		return "headers", fmt.Sprintf("at most %d custom headers", maxHeaders)
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := "headers." + k
		lk := strings.ToLower(k)
		switch {
		case !validHeaderName(k):
			return f, "not a valid HTTP header name"
		case reservedHeaders[lk] || strings.HasPrefix(lk, "herald-") || strings.HasPrefix(lk, "ce-"):
			return f, "this header is set by Herald and cannot be overridden"
		case len(h[k]) > maxHeaderValue:
			return f, fmt.Sprintf("a header value must be at most %d bytes", maxHeaderValue)
		case strings.ContainsAny(h[k], "\r\n\x00"):
			return f, "a header value must not contain CR, LF or NUL"
		}
	}
	return "", ""
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// decodeBody reads a JSON object into v, rejecting unknown fields, trailing
// data and bodies over 1 MiB. On a problem it answers and returns false.
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
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		field, detail := jsonErrorField(err)
		invalid(w, field, detail)
		return false
	}
	if dec.More() {
		invalid(w, "body", "the body must hold one JSON object")
		return false
	}
	return true
}

// jsonErrorField turns an encoding/json error into a field name and detail.
func jsonErrorField(err error) (string, string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		f := te.Field
		if f == "" {
			f = "body"
		}
		return f, fmt.Sprintf("want a JSON %s here, not %s", te.Type.Kind(), te.Value)
	case errors.As(err, &se):
		return "body", "malformed JSON: " + se.Error()
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return name, "unknown field " + name
	case errors.Is(err, io.EOF):
		return "body", "the body is empty; want a JSON object"
	}
	// Errors from a field's own UnmarshalJSON (durations) do not name the
	// field; the message says what is wrong.
	return "body", err.Error()
}
