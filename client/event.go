package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Event is a CloudEvents 1.0 event in JSON (schema CloudEvent): its
// attributes, Data (JSON) or DataBase64 (binary data, base64), and
// Extensions, the extension attributes (lower-case names; string, number,
// boolean or null values), written beside the others.
type Event struct {
	// SpecVersion is "1.0"; left empty, the client sends "1.0".
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	DataContentType string          `json:"datacontenttype,omitempty"`
	DataSchema      string          `json:"dataschema,omitempty"`
	Time            *time.Time      `json:"time,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	DataBase64      string          `json:"data_base64,omitempty"`
	Extensions      map[string]any  `json:"-"`
}

// eventAttributes is Event without its methods and extensions.
type eventAttributes Event

// withSpecVersion returns e with SpecVersion "1.0" when it is empty.
func (e Event) withSpecVersion() Event {
	if e.SpecVersion == "" {
		e.SpecVersion = "1.0"
	}
	return e
}

// MarshalJSON writes the attributes and then the extensions.
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(eventAttributes(e))
	if err != nil || len(e.Extensions) == 0 {
		return b, err
	}
	ext, err := json.Marshal(e.Extensions)
	if err != nil {
		return nil, fmt.Errorf("event extensions: %w", err)
	}
	for name := range e.Extensions {
		if eventAttributeNames[name] {
			return nil, fmt.Errorf("event extension %q is a CloudEvents attribute: set its field", name)
		}
	}
	out := append(b[:len(b)-1], ',')
	return append(out, ext[1:]...), nil
}

// UnmarshalJSON reads the attributes and puts every other member in
// Extensions.
func (e *Event) UnmarshalJSON(b []byte) error {
	var attrs eventAttributes
	if err := json.Unmarshal(b, &attrs); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	*e = Event(attrs)
	for name, raw := range all {
		if eventAttributeNames[name] {
			continue
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return err
		}
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions[name] = v
	}
	return nil
}

// eventAttributeNames are the JSON names of Event's attribute fields.
var eventAttributeNames = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true, "subject": true,
	"datacontenttype": true, "dataschema": true, "time": true, "data": true, "data_base64": true,
}
