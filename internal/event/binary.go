package event

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// hasSpecVersionHeader reports whether h holds a ce-specversion header, in any
// letter case.
func hasSpecVersionHeader(h http.Header) bool {
	for k := range h {
		if strings.EqualFold(k, "ce-specversion") {
			return true
		}
	}
	return false
}

// binaryName names an attribute as a binary-mode request carries it.
func binaryName(attr string) string {
	switch attr {
	case attrDataContentType:
		return "content-type"
	case memberData, memberDataBase64:
		return "body"
	}
	return "ce-" + attr
}

// parseBinary reads one binary-mode event: attributes from the ce-* headers,
// datacontenttype from ct (the Content-Type value, mt its media type), data
// from body. Unless allowReserved, the reserved names are refused
// (checkReserved). A header whose name is refused is reported after a
// missing required attribute: it is more likely that one misnamed. See
// Parse.
func parseBinary(h http.Header, ct, mt string, body []byte, allowReserved bool) (Event, *FieldError) {
	var e Event
	misnamed, fe := e.setHeaders(h)
	if fe != nil {
		return Event{}, fe
	}
	e.DataContentType = strings.TrimSpace(ct)
	if fe := e.setBody(mt, body); fe != nil {
		return Event{}, fe
	}
	return e.finish(e.binaryRequired(h), misnamed, binaryName, allowReserved)
}

// headerError is a problem with the header field, its name cut to 64
// bytes.
func headerError(field, detail string) *FieldError {
	if len(field) > 64 {
		field = field[:64] + "..."
	}
	return &FieldError{Field: field, Detail: detail}
}

// setHeaders sets e's attributes from the ce-* headers of h. It returns the
// first header whose name is refused (misnamed: not an attribute name,
// ce-datacontenttype or ce-data), and fe, a problem that stops the request
// at once (a repeated header, a bad value). Headers are visited in name
// order, so that the same request always reports the same field.
func (e *Event) setHeaders(h http.Header) (misnamed, fe *FieldError) {
	keys := make([]string, 0, len(h))
	for k := range h {
		if len(k) >= 3 && strings.EqualFold(k[:3], "ce-") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		vs := h[k]
		if len(vs) == 0 {
			continue
		}
		field := strings.ToLower(k)
		attr := field[3:]
		if len(vs) > 1 || seen[attr] {
			return nil, headerError(field, "repeated header")
		}
		seen[attr] = true
		v, err := url.PathUnescape(vs[0])
		if err != nil {
			return nil, headerError(field, percentDetail(err))
		}
		if !utf8.ValidString(v) {
			return nil, headerError(field, "not valid UTF-8 after percent-decoding")
		}
		var refused string
		switch attr {
		case attrSpecVersion, attrID, attrSource, attrType, attrSubject, attrDataSchema, attrTime:
			if d := e.setAttr(attr, v); d != "" {
				return nil, headerError(field, d)
			}
		case attrDataContentType:
			refused = "not allowed in binary mode; the Content-Type header carries datacontenttype"
		case memberData:
			refused = `"data" is reserved; in binary mode the body carries the data`
		default:
			if refused = checkExtensionName(attr); refused == "" {
				if e.Extensions == nil {
					e.Extensions = make(map[string]any)
				}
				e.Extensions[attr] = v
			}
		}
		if refused != "" && misnamed == nil {
			misnamed = headerError(field, refused)
		}
	}
	return misnamed, nil
}

// percentDetail says why a header value is not percent-encoded as the
// HTTP binding requires (err from url.PathUnescape).
func percentDetail(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return "bad percent-encoding: " + escapeReason(esc)
	}
	return "bad percent-encoding"
}

// setBody sets e's data from a binary-mode body of media type mt: JSON
// data for a JSON media type, else base64.
func (e *Event) setBody(mt string, body []byte) *FieldError {
	if len(body) == 0 {
		return nil
	}
	if !isJSONMediaType(mt) {
		e.DataBase64 = base64.StdEncoding.EncodeToString(body)
		return nil
	}
	if !utf8.Valid(body) {
		return headerError("body", "not valid UTF-8, as content type "+quote(mt)+" requires")
	}
	if !validJSON(body) {
		return headerError("body", syntaxDetail(body)+"; content type "+quote(mt)+" requires JSON")
	}
	data, repeated := dataJSON(body)
	if repeated != "" {
		return &FieldError{Field: "body" + repeated, Detail: repeatedDetail}
	}
	if string(data) != "null" {
		e.Data = data
	}
	return nil
}
