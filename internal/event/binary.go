package event

import (
	"encoding/base64"
	"encoding/json"
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
// (checkReserved). See Parse.
func parseBinary(h http.Header, ct, mt string, body []byte, allowReserved bool) (Event, *FieldError) {
	var e Event
	bad := func(field, detail string) (Event, *FieldError) {
		if len(field) > 64 {
			field = field[:64] + "..."
		}
		return Event{}, &FieldError{Field: field, Detail: detail}
	}
	// Visit headers in name order so that the same request always reports
	// the same field.
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
			return bad(field, "repeated header")
		}
		seen[attr] = true
		v, err := url.PathUnescape(vs[0])
		if err != nil {
			return bad(field, "bad percent-encoding: "+err.Error())
		}
		if !utf8.ValidString(v) {
			return bad(field, "not valid UTF-8 after percent-decoding")
		}
		switch attr {
		case attrSpecVersion, attrID, attrSource, attrType, attrSubject, attrDataSchema, attrTime:
			if d := e.setAttr(attr, v); d != "" {
				return bad(field, d)
			}
		case attrDataContentType:
			return bad(field, "not allowed in binary mode; the Content-Type header carries datacontenttype")
		case memberData:
			return bad(field, `"data" is reserved; in binary mode the body carries the data`)
		default:
			if d := checkExtensionName(attr); d != "" {
				return bad(field, d)
			}
			if e.Extensions == nil {
				e.Extensions = make(map[string]any)
			}
			e.Extensions[attr] = v
		}
	}
	e.DataContentType = strings.TrimSpace(ct)
	if len(body) > 0 {
		if isJSONMediaType(mt) {
			if !utf8.Valid(body) {
				return bad("body", "not valid UTF-8, as content type "+quote(mt)+" requires")
			}
			if !validJSON(body) {
				var v any
				err := json.Unmarshal(body, &v)
				return bad("body", "not valid JSON, as content type "+quote(mt)+" requires: "+err.Error())
			}
			data, repeated := dataJSON(body)
			if repeated != "" {
				return Event{}, &FieldError{Field: "body" + repeated, Detail: repeatedDetail}
			}
			if string(data) != "null" {
				e.Data = data
			}
		} else {
			e.DataBase64 = base64.StdEncoding.EncodeToString(body)
		}
	}
	if fe := e.validate(binaryName); fe != nil {
		return Event{}, fe
	}
	if !allowReserved {
		if fe := e.checkReserved(binaryName); fe != nil {
			return Event{}, fe
		}
	}
	e.checked = true
	return e, nil
}
