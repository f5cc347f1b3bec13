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
	defaultSource := opts.DefaultSource
	e := Event{SpecVersion: SpecVersion}
	var fe *FieldError
	bad := func(member, detail string) {
		if len(member) > 64 {
			member = member[:64] + "..."
		}
		field := prefix + member
		if member == "" { // the event as a whole
			field = strings.TrimSuffix(prefix, ".")
			if field == "" {
				field = "body"
			}
		}
		fe = &FieldError{Field: field, Detail: detail}
	}
	var seen [8]bool // by member, in the order of the constants
	members := [...]string{egID, egTopic, egSubject, egEventType, egEventTime, egData, egDataVersion, egMetadataVersion}
	var topic, metadataVersion string
	hasTopic, hasMetadataVersion, hasSubject, hasTime := false, false, false, false
	ok := forEachMember(raw, func(nameB, _, val []byte) bool {
		name := string(nameB)
		k := -1
		for i, m := range members {
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
			bad(name, detail)
			return false
		}
		if seen[k] {
			bad(name, repeatedDetail)
			return false
		}
		seen[k] = true
		if string(val) == "null" {
			return true // absent
		}
		if name == egData {
			data, repeated := dataJSON(val) // raw is valid JSON
			if repeated != "" {
				bad(name, repeatedDetail)
				fe.Field += repeated
				return false
			}
			e.Data = data
			return true
		}
		s, d := jsonString(val)
		if d != "" {
			bad(name, d)
			return false
		}
		switch name {
		case egID:
			e.ID = s
		case egTopic:
			if s == "" {
				bad(name, "must not be empty when present")
				return false
			}
			topic, hasTopic = s, true
		case egSubject:
			e.Subject, hasSubject = s, true
		case egEventType:
			e.Type = s
		case egEventTime:
			t, d := parseTime(s)
			if d != "" {
				bad(name, d)
				return false
			}
			e.Time, hasTime = t, true
		case egDataVersion:
			if s != "" {
				e.Extensions = map[string]any{extDataVersion: s}
			}
		case egMetadataVersion:
			metadataVersion, hasMetadataVersion = s, true
		}
		return true
	})
	if fe != nil {
		return Event{}, fe
	}
	if !ok {
		bad("", "not valid JSON")
		return Event{}, fe
	}
	switch {
	case e.ID == "":
		bad(egID, "required")
	case e.Type == "":
		bad(egEventType, "required")
	case !hasSubject:
		bad(egSubject, "required (it may be empty)")
	case !hasTime:
		bad(egEventTime, "required")
	case hasMetadataVersion && metadataVersion != eventGridMetadataVersion:
		bad(egMetadataVersion, `must be "1", got `+quote(metadataVersion))
	case !hasTopic && defaultSource == "":
		bad(egTopic, "required: no default source applies to this request")
	}
	if fe != nil {
		return Event{}, fe
	}
	e.Source = topic
	if !hasTopic {
		e.Source = defaultSource
	}
	name := func(attr string) string { return prefix + eventGridName(attr) }
	if fe := e.validate(name); fe != nil {
		return Event{}, fe
	}
	if !opts.AllowReserved {
		if fe := e.checkReserved(name); fe != nil {
			return Event{}, fe
		}
	}
	e.checked = true
	return e, nil
}
