package event

import (
	"strings"
)

// Members of an Azure Event Grid schema event.
const (
	egID              = "id"
	egTopic           = "topic"
	egSubject         = "subject"
	egEventType       = "eventType"
	egEventTime       = "eventTime"
	egData            = "data"
	egDataVersion     = "dataVersion"
	egMetadataVersion = "metadataVersion"
)

// extDataVersion is the extension attribute that carries an Event Grid
// event's dataVersion.
const extDataVersion = "dataversion"

// isEventGridObject reports whether raw, a valid JSON object, is an Event
// Grid event: it has an eventType member and no specversion member.
func isEventGridObject(raw []byte) bool {
	hasType, hasSpec := false, false
	forEachMember(raw, func(name, _, _ []byte) bool {
		switch string(name) {
		case egEventType:
			hasType = true
		case attrSpecVersion:
			hasSpec = true
		}
		return !hasSpec
	})
	return hasType && !hasSpec
}

// mixedSchemas reports an array element whose schema differs from the first
// element's.
func mixedSchemas(field string, index int, eventGrid bool) *FieldError {
	detail := "a CloudEvent in an array of Event Grid events; a request holds events of one schema"
	if eventGrid {
		detail = "an Event Grid event (eventType, no specversion) in an array of CloudEvents; " +
			"a request holds events of one schema"
	}
	return &FieldError{Field: field, Detail: detail, Index: index}
}

// eventGridName names a CloudEvents attribute by the Event Grid member it
// comes from.
func eventGridName(attr string) string {
	switch attr {
	case attrSource:
		return egTopic
	case attrType:
		return egEventType
	case attrTime:
		return egEventTime
	case extDataVersion:
		return egDataVersion
	}
	return attr
}

// parseEventGrid decodes one Event Grid event from raw, a valid JSON object,
// into a CloudEvent (see ParseWith), naming fields with prefix. Unless
// opts.AllowReserved, the reserved names are refused (checkReserved).
func parseEventGrid(raw []byte, prefix string, opts *ParseOptions) (Event, *FieldError) {
	r := egReader{prefix: prefix, e: Event{SpecVersion: SpecVersion}}
	ok := forEachMember(raw, r.member)
	if r.fe != nil {
		return Event{}, r.fe
	}
	if !ok {
		r.bad("", "not valid JSON")
		return Event{}, r.fe
	}
	r.checkRequired(opts.DefaultSource, raw)
	e := r.e
	e.Source = r.topic
	if !r.hasTopic {
		e.Source = opts.DefaultSource
	}
	name := func(attr string) string { return prefix + eventGridName(attr) }
	return e.finish(r.fe, r.unknown, name, opts.AllowReserved)
}

// egMembers are the members of an Event Grid event, in the order of the
// constants.
var egMembers = [...]string{egID, egTopic, egSubject, egEventType, egEventTime, egData, egDataVersion, egMetadataVersion}

// egReader collects the members of one Event Grid event into a CloudEvent,
// stopping at the first error (fe). The first unknown member is kept
// (unknown) and reported after the required members: it is more likely one
// of those misnamed.
type egReader struct {
	prefix      string // of the fields errors name
	e           Event
	fe, unknown *FieldError
	seen        [len(egMembers)]bool // by member, in the order of egMembers

	topic, metadataVersion                            string
	hasTopic, hasMetadataVersion, hasSubject, hasTime bool
}

// bad records the error detail about member ("" for the event as a whole).
func (r *egReader) bad(member, detail string) {
	r.fe = &FieldError{Field: r.field(member), Detail: detail}
}

// field names member ("" for the event as a whole) in a problem, its name
// cut to 64 bytes.
func (r *egReader) field(member string) string {
	if len(member) > 64 {
		member = member[:64] + "..."
	}
	if member == "" { // the event as a whole
		field := strings.TrimSuffix(r.prefix, ".")
		if field == "" {
			field = "body"
		}
		return field
	}
	return r.prefix + member
}

// member reads one member of the event (a forEachMember callback): unknown
// and repeated members are errors (the first unknown one kept for later),
// null is absent, data is kept as JSON and every other member must be a
// string. It returns false at an error that stops the event.
func (r *egReader) member(nameB, _, val []byte) bool {
	name := string(nameB)
	k := -1
	for i, m := range egMembers {
		if m == name {
			k = i
			break
		}
	}
	if k < 0 {
		detail := "not a member of an Event Grid event (id, topic, subject, eventType, eventTime, data, dataVersion, metadataVersion)"
		if name == "" {
			detail = "a member name must not be empty; " + detail[6:]
		}
		if r.unknown == nil {
			r.unknown = &FieldError{Field: r.field(name), Detail: detail}
		}
		return true
	}
	if r.seen[k] {
		r.bad(name, repeatedDetail)
		return false
	}
	r.seen[k] = true
	if string(val) == "null" {
		return true // absent
	}
	if name == egData {
		data, repeated := dataJSON(val) // raw is valid JSON
		if repeated != "" {
			r.bad(name, repeatedDetail)
			r.fe.Field += repeated
			return false
		}
		r.e.Data = data
		return true
	}
	s, d := jsonString(val)
	if d != "" {
		r.bad(name, d)
		return false
	}
	return r.set(name, s)
}

// set stores the string member name's value s where it goes in the
// CloudEvent; it returns false if s is not a valid value for it.
func (r *egReader) set(name, s string) bool {
	switch name {
	case egID:
		r.e.ID = s
	case egTopic:
		if s == "" {
			r.bad(name, "must not be empty when present")
			return false
		}
		r.topic, r.hasTopic = s, true
	case egSubject:
		r.e.Subject, r.hasSubject = s, true
	case egEventType:
		r.e.Type = s
	case egEventTime:
		t, d := parseTime(s)
		if d != "" {
			r.bad(name, d)
			return false
		}
		r.e.Time, r.hasTime = t, true
	case egDataVersion:
		if s != "" {
			r.e.Extensions = map[string]any{extDataVersion: s}
		}
	case egMetadataVersion:
		r.metadataVersion, r.hasMetadataVersion = s, true
	}
	return true
}

// checkRequired records an error for the first required member missing
// (topic only when there is no defaultSource), naming a member of raw, the
// event, that looks like it misnamed, or a metadataVersion other than
// eventGridMetadataVersion.
func (r *egReader) checkRequired(defaultSource string, raw []byte) {
	missing, example := "", ""
	switch {
	case r.e.ID == "":
		missing, example = egID, requiredExamples[attrID]
	case r.e.Type == "":
		missing, example = egEventType, requiredExamples[attrType]
	case !r.hasSubject:
		missing, example = egSubject, requiredExamples[egSubject]
	case !r.hasTime:
		missing, example = egEventTime, requiredExamples[egEventTime]
	}
	if missing != "" {
		r.fe = requiredProblem(r.field(missing), missing, example, memberNames(raw))
		return
	}
	switch {
	case r.hasMetadataVersion && r.metadataVersion != eventGridMetadataVersion:
		r.bad(egMetadataVersion, `must be "1", got `+quote(r.metadataVersion))
	case !r.hasTopic && defaultSource == "":
		r.bad(egTopic, "required: no default source applies to this request")
	}
}
