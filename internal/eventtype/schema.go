package eventtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxViolations bounds the violations one check reports (the first found,
// in the validator's order).
const MaxViolations = 10

// schemaURL is where a schema being compiled is placed: a schema names
// itself by its $id, if any, as well.
const schemaURL = "urn:herald:event-type-schema"

// Schema is one compiled schema version. It is safe for concurrent use:
// compiled once, shared by every check.
type Schema struct {
	s *jsonschema.Schema
	// ID is the schema's $id ("" without one): an event whose dataschema
	// is this URI asks for this version.
	ID string
	// widths are, by depth in the data, the most subschemas s applies to
	// one value that deep (widest): what a value costs (Work).
	widths []int
}

// errNoLoad refuses every document a schema refers to: a schema is
// compiled from itself alone.
var errNoLoad = errors.New("a schema may refer ($ref) only to itself: Herald loads no other document")

type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errNoLoad }

// Compile compiles raw, a JSON Schema (draft 2020-12 unless its $schema
// names another draft the validator knows), and returns it; the error is
// the validator's message. Its numbers and regular expressions are
// bounded (MaxNumberLen, MaxNumberExponent, MaxPatternSize,
// MaxSchemaPatternSize), and so is what it applies to one value of the
// data (MaxFanOut); it has no $ref loop.
func Compile(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if at, problem := badData(doc, -1<<30, nil); problem != "" { // a schema's depth is the JSON parser's
		return nil, fmt.Errorf("at %q: %s", at, problem)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	patterns := &patternBudget{}
	c.UseRegexpEngine(patterns.compile)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	patterns.done.Store(true)
	if err != nil {
		return nil, errors.New(oneLine(strings.ReplaceAll(err.Error(), schemaURL, "the schema")))
	}
	if at := refLoop(s); at != "" {
		return nil, fmt.Errorf("the subschema at %s applies itself again to the same data (a $ref loop): every event would fail",
			strings.TrimPrefix(at, schemaURL))
	}
	widths := widest(s)
	if n, depth := widthAbove(widths, MaxFanOut); n > 0 {
		return nil, fmt.Errorf("the schema applies more than %d subschemas to one value %d levels deep in the data (counting each path through $ref, allOf, anyOf, oneOf, not, if/then/else): every check would cost as much", MaxFanOut, depth)
	}
	hashEnums(s)
	id := ""
	if m, ok := doc.(map[string]any); ok {
		id, _ = m["$id"].(string)
	}
	return &Schema{s: s, ID: id, widths: widths}, nil
}

// widthAbove returns the first width above most and its depth; 0 and 0
// when none is.
func widthAbove(widths []int, most int) (n, depth int) {
	for d, w := range widths {
		if w > most {
			return w, d
		}
	}
	return 0, 0
}

// Violation is one way data breaks a schema.
type Violation struct {
	// Pointer is the JSON pointer (RFC 6901) of the failing member in the
	// data: "" for the data itself, "/amount", "/items/0/sku".
	Pointer string `json:"pointer"`
	// Keyword is the schema keyword that failed: "required", "minimum",
	// "type", … ("" when the data is not JSON at all).
	Keyword string `json:"keyword"`
	Message string `json:"message"`
}

// Field names the member as a problem names it: "data" then the pointer
// ("data/amount").
func (v Violation) Field() string { return "data" + v.Pointer }

var english = message.NewPrinter(language.English)

// CheckJSON validates data (JSON text) against s and returns its
// violations (at most MaxViolations; none: valid). Its work is not
// charged anywhere (CheckJSONWithin).
func (s *Schema) CheckJSON(data []byte) []Violation {
	vs, _ := s.CheckJSONWithin(data, nil)
	return vs
}

// CheckJSONWithin is CheckJSON, charging the check's schema work (Work) to
// w before the validator runs (nil: charged nowhere): when that takes w
// past its limit, it returns a *WorkError and validates nothing.
func (s *Schema) CheckJSONWithin(data []byte, w *Work) ([]Violation, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []Violation{{Message: "the data is not JSON: " + err.Error()}}, nil
	}
	return s.check(v, w)
}

// Check validates v (as jsonschema.UnmarshalJSON decodes JSON) against s.
// A number in v beyond MaxNumberLen or MaxNumberExponent, or a value
// deeper than MaxDataDepth, is a violation naming it, and v is not
// validated further (the validator's arithmetic on such a number would be
// unbounded; MaxFanOut is counted to MaxDataDepth). Each violation's message is cut at 512 bytes
// and its pointer at 256 (ending in "…"): the message may quote the data
// (a string that breaks a pattern) or the schema (an enum's values).
func (s *Schema) Check(v any) []Violation {
	vs, _ := s.check(v, nil)
	return vs
}

// check is Check, charging its work to w first (CheckJSONWithin). The walk
// that looks for numbers and depths beyond the bounds counts the work.
func (s *Schema) check(v any, w *Work) ([]Violation, error) {
	count := workCount{widths: s.widths}
	if at, problem := badData(v, 0, &count); problem != "" {
		return []Violation{{Pointer: cut(at, maxStoredPointer), Keyword: "type", Message: problem}}, nil
	}
	if err := w.charge(count.spent); err != nil {
		return nil, err
	}
	err := s.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}, nil
	}
	var out []Violation
	leaves(ve, &out)
	return out, nil
}

// leaves appends the innermost errors of e (those that say what failed,
// not that a subschema did), at most MaxViolations.
func leaves(e *jsonschema.ValidationError, out *[]Violation) {
	if len(*out) >= MaxViolations {
		return
	}
	if len(e.Causes) == 0 {
		kw := ""
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
		*out = append(*out, Violation{Pointer: cut(pointer(e.InstanceLocation), maxStoredPointer), Keyword: kw,
			Message: cut(e.ErrorKind.LocalizedString(english), maxStoredMessage)})
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
}

// pointer writes the tokens of an instance location as a JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// oneLine joins the lines of the validator's message (an indented tree of
// causes) with "; ", for a problem's detail.
func oneLine(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(strings.TrimSpace(l), "- ")
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "; ")
}
