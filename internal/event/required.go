package event

import (
	"net/http"
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/strictjson"
)

// This file holds what a refused event is told about its required
// attributes: Parse reports a missing one before it complains of any other
// member's name (a client that wrote event_type for type hears that type
// is missing, not that event_type is not an attribute name), names the
// member it probably meant, and tells a JSON body that is no CloudEvent at
// all what Herald accepts.

// requiredExamples say what each required attribute is, for the detail of
// its problem when it is missing.
var requiredExamples = map[string]string{
	attrSpecVersion: `the CloudEvents version, "1.0"`,
	attrID:          `a string unique for the source, such as "order-1234-created"`,
	attrSource:      `a URI-reference naming where the event happened, such as "/shop/orders"`,
	attrType:        `the kind of event, such as "com.example.order.created"`,
	egSubject:       `the subject of the event, such as "/orders/1234"; it may be ""`,
	egEventTime:     `an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"`,
}

// accepted says what a publish request may hold: the detail of a JSON body
// that is not a CloudEvent.
const accepted = `this is not a CloudEvent. Herald accepts CloudEvents 1.0: ` +
	`one event in structured mode, your JSON as its data: {"specversion": "1.0", "id": "order-1234-created", ` +
	`"source": "/shop/orders", "type": "com.example.order.created", "data": {...}}, sent as ` +
	`application/cloudevents+json (or application/json); or binary mode, your JSON as the body, ` +
	`with the headers ce-specversion: 1.0, ce-id, ce-source and ce-type; or a batch, a JSON array of ` +
	`structured events sent as application/cloudevents-batch+json (or application/json)`

// finish checks e once its members are read, naming attributes with name,
// and returns it checked: it reports required (a required attribute
// missing), then misnamed (the first member whose name was refused), then
// what Validate refuses, then, unless allowReserved, a reserved name
// (checkReserved).
func (e *Event) finish(required, misnamed *FieldError, name func(attr string) string, allowReserved bool) (Event, *FieldError) {
	switch {
	case required != nil:
		return Event{}, required
	case misnamed != nil:
		return Event{}, misnamed
	}
	if fe := e.validate(name); fe != nil {
		return Event{}, fe
	}
	if !allowReserved {
		if fe := e.checkReserved(name); fe != nil {
			return Event{}, fe
		}
	}
	e.checked = true
	return *e, nil
}

// missingRequired returns the first required attribute (specversion, id,
// source, type, in that order) e lacks, or "".
func (e *Event) missingRequired() string {
	switch {
	case e.SpecVersion == "":
		return attrSpecVersion
	case e.ID == "":
		return attrID
	case e.Source == "":
		return attrSource
	case e.Type == "":
		return attrType
	}
	return ""
}

// requiredProblem is the problem of a missing required attribute: field
// names it as the request's problems do ("events[2].type", "ce-type"),
// attr as the request should have sent it ("type", "ce-type",
// "eventType"), example says what it holds. sent lists the names the
// request used: the first that looks like a misspelling of attr is
// suggested instead of the example.
func requiredProblem(field, attr, example string, sent []string) *FieldError {
	detail := attr + " is required"
	if n := nearMiss(attr, sent); n != "" {
		detail += "; did you mean to send " + quoteName(n) + " as " + attr + "?"
	} else if example != "" {
		detail += ": " + example
	}
	return &FieldError{Field: field, Detail: detail}
}

// quoteName writes a member name for a detail, cut to 64 bytes.
func quoteName(n string) string {
	if len(n) > 64 {
		return n[:64] + "..."
	}
	return n
}

// memberNames returns the names of the top-level members of raw, a valid
// JSON object.
func memberNames(raw []byte) []string {
	var names []string
	forEachMember(raw, func(name, _, _ []byte) bool {
		names = append(names, string(name))
		return true
	})
	return names
}

// structuredRequired reports a structured-mode event missing a required
// attribute (field names the request's member, as parseObject's problems
// do), raw being its object; nil when it lacks none. A JSON object with
// neither specversion nor any other required attribute is told what Herald
// accepts.
func (e *Event) structuredRequired(raw []byte, field func(attr string) string) *FieldError {
	attr := e.missingRequired()
	if attr == "" {
		return nil
	}
	names := memberNames(raw)
	fe := requiredProblem(field(attr), attr, requiredExamples[attr], names)
	if attr == attrSpecVersion && e.ID == "" && e.Source == "" && e.Type == "" && nearMiss(attr, names) == "" {
		fe.Detail = "specversion is required: " + accepted
	}
	return fe
}

// binaryRequired reports a binary-mode event missing a required attribute
// (its ce-specversion is there, or the request would not be binary mode),
// naming the header; the request's other headers are the candidates of a
// misspelling.
func (e *Event) binaryRequired(h http.Header) *FieldError {
	attr := e.missingRequired()
	if attr == "" {
		return nil
	}
	var names []string
	for k := range h {
		names = append(names, strings.ToLower(k))
	}
	slices.Sort(names)
	name := binaryName(attr)
	return requiredProblem(name, name, requiredExamples[attr], names)
}

// nearMiss returns the first of names that looks like a misspelling of
// want, or "": the same name once letter case, punctuation and a prefix
// such as "event", "ce" or "cloudevents" are set aside (event_type,
// eventType, ce_type, Type for type; spec_version, specVersion for
// specversion; event_id, eventID, _id for id), or, for a name of four letters
// or more, one letter added, dropped, changed or two swapped (tpye,
// soruce). want itself is not a miss.
func nearMiss(want string, names []string) string {
	w := stem(want)
	for _, n := range names {
		if n == want || len(n) > 128 {
			continue
		}
		s := stem(n)
		if s == "" {
			continue
		}
		if s == w || (len(w) >= 4 && strictjson.EditDistance(s, w) <= 1) {
			return n
		}
	}
	return ""
}

// stemPrefixes are the prefixes stem drops, longest first.
var stemPrefixes = []string{"cloudevents", "cloudevent", "event", "ce"}

// stem is a name lowercased, without anything but letters and digits, and
// without the prefixes of stemPrefixes, as often as they begin it (while
// something is left).
func stem(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		}
	}
	s := b.String()
	for cut := true; cut; {
		cut = false
		for _, p := range stemPrefixes {
			if len(s) > len(p) && strings.HasPrefix(s, p) {
				s, cut = s[len(p):], true
				break
			}
		}
	}
	return s
}
