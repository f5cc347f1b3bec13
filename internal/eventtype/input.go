package eventtype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/strictjson"
)

// Input is an event type create (POST) or change (PATCH) request, as the
// API decodes it (strictjson.Decode); absent fields are nil.
type Input struct {
	Name        *string                    `json:"name"`
	Description *string                    `json:"description"`
	Group       *string                    `json:"group"`
	Schemas     map[string]json.RawMessage `json:"schemas"`
	Examples    *[]json.RawMessage         `json:"examples"`
	Deprecated  *bool                      `json:"deprecated"`
}

// ImmutableError refuses a change of a schema version already stored: a
// version, once published, never changes (the API answers 409 naming
// Field, "schemas.N").
type ImmutableError struct {
	Name    string
	Version int
}

// Field is the problem's field: schemas.N.
func (e *ImmutableError) Field() string { return "schemas." + strconv.Itoa(e.Version) }

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("%s: version %d of %s is published and never changes; add version %d instead",
		e.Field(), e.Version, e.Name, e.Version+1)
}

// reservedNames are names an event type may not take besides the reserved
// types (event.ReservedTypeName): the catalog's AsyncAPI document's path,
// and the path segments "." and ".." (no route could name such a type:
// /v1/event-types/.. is /v1/).
var reservedNames = []string{"asyncapi.json", ".", ".."}

// CheckName checks name as an event type's name, the field's: a CloudEvents
// type (at most event.MaxTypeLen bytes of text, not blank), not a type
// Herald reserves for its own events (herald., in any letter case) and not
// "asyncapi.json", "." or "..".
func CheckName(field, name string) *strictjson.Error {
	if err := strictjson.CheckText(field, name, event.MaxTypeLen, true); err != nil {
		return err
	}
	if event.ReservedTypeName(name) {
		return strictjson.Errorf(field, "%q is reserved: types beginning %q (in any letter case) are Herald's own events", name, event.ReservedTypePrefix)
	}
	for _, r := range reservedNames {
		if strings.EqualFold(name, r) {
			return strictjson.Errorf(field, "%q is reserved (the catalog's AsyncAPI document, or a path segment no route could name)", name)
		}
	}
	return nil
}

// New checks in as a create request and returns the event type it makes,
// at revision 1: a name is required; schemas, examples and the rest are
// optional.
func (in Input) New(now time.Time) (EventType, error) {
	if in.Name == nil {
		return EventType{}, strictjson.Errorf("name", "name is required: the CloudEvents type, such as \"invoice.paid\"")
	}
	if err := CheckName("name", *in.Name); err != nil {
		return EventType{}, err
	}
	t := EventType{Name: *in.Name, Schemas: map[int]json.RawMessage{}, CreatedAt: now, UpdatedAt: now, Revision: 1}
	if err := in.Apply(&t, now); err != nil {
		return EventType{}, err
	}
	return t, nil
}

// Apply checks the fields in sets and writes them over t, with UpdatedAt
// now (a problem may leave t half changed): a *strictjson.Error for a bad
// field, an *ImmutableError for a version t has with another schema (the
// same schema again changes nothing). New versions must be numbered above
// t's newest; the examples, sent or kept, must be valid against the newest
// version.
func (in Input) Apply(t *EventType, now time.Time) error {
	if in.Name != nil && *in.Name != t.Name {
		return strictjson.Errorf("name", "an event type's name never changes (this one is %q); create a type of the new name", t.Name)
	}
	if err := in.applyText(t); err != nil {
		return err
	}
	if err := in.applySchemas(t); err != nil {
		return err
	}
	if in.Examples != nil {
		t.Examples = *in.Examples
	}
	if err := checkExamples(t, in.Examples != nil); err != nil {
		return err
	}
	if in.Deprecated != nil {
		t.Deprecated = *in.Deprecated
	}
	t.UpdatedAt = now
	return nil
}

// applyText checks and sets the description and group.
func (in Input) applyText(t *EventType) *strictjson.Error {
	if in.Description != nil {
		if err := strictjson.CheckText("description", *in.Description, MaxDescriptionLen, false); err != nil {
			return err
		}
		t.Description = *in.Description
	}
	if in.Group != nil {
		if err := strictjson.CheckText("group", *in.Group, MaxGroupLen, false); err != nil {
			return err
		}
		t.Group = *in.Group
	}
	return nil
}

// applySchemas checks the versions in sends (numbers 1..MaxVersions above
// t's newest, at most MaxSchemaBytes each, compiling) and adds them to t,
// compacted.
func (in Input) applySchemas(t *EventType) error {
	newest := t.Newest()
	added := map[int]json.RawMessage{}
	for key, raw := range in.Schemas {
		field := "schemas." + key
		v, err := strconv.Atoi(key)
		if err != nil || v < 1 || v > MaxVersions || strconv.Itoa(v) != key {
			return strictjson.Errorf(field, "a version is a whole number from 1 to %d, such as \"1\", not %q", MaxVersions, key)
		}
		if len(raw) > MaxSchemaBytes {
			return strictjson.Errorf(field, "a schema must be at most %d bytes, got %d", MaxSchemaBytes, len(raw))
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return strictjson.Errorf(field, "must be a JSON Schema: %v", err)
		}
		if old, ok := t.Schemas[v]; ok {
			if !bytes.Equal(old, compact.Bytes()) {
				return &ImmutableError{Name: t.Name, Version: v}
			}
			continue
		}
		if v <= newest {
			return strictjson.Errorf(field, "a new version must be numbered above the newest, %d", newest)
		}
		if _, err := Compile(compact.Bytes()); err != nil {
			return strictjson.Errorf(field, "does not compile as a JSON Schema: %v", err)
		}
		added[v] = compact.Bytes()
	}
	for v, raw := range added {
		t.Schemas[v] = raw
	}
	return nil
}

// checkExamples checks t's examples: at most MaxExamples of at most
// MaxExampleBytes each, JSON, and valid against the newest version (sent
// says whether the request sent them, for the problem's advice).
func checkExamples(t *EventType, sent bool) *strictjson.Error {
	if len(t.Examples) > MaxExamples {
		return strictjson.Errorf("examples", "must list at most %d examples, got %d", MaxExamples, len(t.Examples))
	}
	var s *Schema
	if n := t.Newest(); n > 0 {
		var err error
		if s, err = Compile(t.Schemas[n]); err != nil {
			return strictjson.Errorf(fmt.Sprintf("schemas.%d", n), "does not compile as a JSON Schema: %v", err)
		}
	}
	for i, ex := range t.Examples {
		field := fmt.Sprintf("examples[%d]", i)
		if len(ex) > MaxExampleBytes {
			return strictjson.Errorf(field, "an example must be at most %d bytes, got %d", MaxExampleBytes, len(ex))
		}
		if s == nil {
			continue
		}
		if vs := s.CheckJSON(ex); len(vs) > 0 {
			advice := ""
			if !sent {
				advice = " (a kept example; send examples that fit the new version)"
			}
			return strictjson.Errorf(field+vs[0].Pointer, "is not valid against version %d%s: %s: %s",
				t.Newest(), advice, vs[0].Keyword, vs[0].Message)
		}
	}
	return nil
}
