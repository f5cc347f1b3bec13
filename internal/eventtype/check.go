package eventtype

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/event"
)

// Validation modes: an account's settings.schema_validation.
const (
	// ModeOff: events are not checked against their schemas (the default).
	ModeOff = "off"
	// ModeWarn: an event that breaks its schema is accepted; its
	// violations are answered (schema_errors), counted and logged.
	ModeWarn = "warn"
	// ModeEnforce: a request with an event that breaks its schema is
	// refused whole, and nothing of it is stored.
	ModeEnforce = "enforce"
)

// Refusal is why a publish request is refused: an event that breaks its
// schema (ModeEnforce), or one of a type the catalog does not hold from an
// account that publishes catalog types only.
type Refusal struct {
	// Index is the event's place in the request.
	Index int
	// Field names the failing member: "type", "dataschema",
	// "dataversion", or "data" and the JSON pointer of the member in the
	// data ("data/amount"); "events[i]." before it in a request of
	// several events.
	Field string
	// Keyword is the schema keyword that failed ("" for the type or the
	// version).
	Keyword string
	Detail  string
}

func (r *Refusal) Error() string { return r.Field + ": " + r.Detail }

// Checked is what a check found in one event that it accepted: the schema
// version it was checked against and its violations (none: valid).
type Checked struct {
	Version    int
	Violations []Violation
}

// Check checks evs, the events of one publish request of an account whose
// settings.schema_validation is mode and settings.catalog_only is
// catalogOnly. An event of a type Herald reserves (its own events) is not
// checked. With catalogOnly, an event of a type the catalog does not hold
// (archived types are held) is refused, naming the nearest one; a type
// outside the catalog is otherwise accepted unchecked. Unless mode is
// ModeOff, an event of a type with schemas is checked against the version
// it asks for (version) or the newest: under ModeEnforce the first
// violation refuses the request; under ModeWarn it is returned, in the
// event's place (nil for the events without: the slice is nil when none
// has). A refusal (a *Refusal) names the event's first violation. The
// checks together may cost at most maxWork schema tests (0: no limit;
// Work): each event's is charged before it is validated, and one that
// would pass maxWork refuses the request with a *WorkError.
func (c *Catalog) Check(evs []event.Event, mode string, catalogOnly bool, maxWork int) ([]Checked, error) {
	if (mode == ModeOff || mode == "") && !catalogOnly {
		return nil, nil
	}
	snap := c.snap.Load()
	if len(snap.types) == 0 && !catalogOnly {
		return nil, nil
	}
	var out []Checked
	work := &Work{Limit: maxWork}
	for i, ev := range evs {
		if event.ReservedTypeName(ev.Type) {
			continue
		}
		e := snap.types[ev.Type]
		if e == nil {
			if catalogOnly {
				return nil, refuse(i, len(evs), "type", "", notInCatalog(ev.Type, snap.names))
			}
			continue
		}
		if mode == ModeOff || mode == "" || e.newest == 0 {
			continue
		}
		v, field, vs, err := e.check(ev, work)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			continue
		}
		if mode == ModeEnforce {
			detail := fmt.Sprintf("%s (version %d of %s)", vs[0].Message, v, e.name)
			if vs[0].Keyword != "" {
				detail = fmt.Sprintf("fails the schema keyword %q: %s", vs[0].Keyword, detail)
			}
			return nil, refuse(i, len(evs), field, vs[0].Keyword, detail+"; nothing was stored")
		}
		if out == nil {
			out = make([]Checked, len(evs))
		}
		out[i] = Checked{Version: v, Violations: vs}
	}
	return out, nil
}

func refuse(i, n int, field, keyword, detail string) *Refusal {
	if n > 1 {
		field = "events[" + strconv.Itoa(i) + "]." + field
	}
	return &Refusal{Index: i, Field: field, Keyword: keyword, Detail: detail}
}

// notInCatalog is the detail of a refused type.
func notInCatalog(typ string, names []string) string {
	d := fmt.Sprintf("%q is not in the event-type catalog, and this account takes catalog types only (settings.catalog_only)", typ)
	if n := Nearest(typ, names); n != "" {
		d += fmt.Sprintf("; the nearest catalog type is %q", n)
	}
	return d
}

// check checks ev against the version it asks for, or the newest,
// charging its work to w; it returns the version and the field of the
// first violation ("data…", or the attribute that named an unknown
// version), or a *WorkError.
func (e *entry) check(ev event.Event, w *Work) (int, string, []Violation, error) {
	v, field, problem := e.version(ev)
	if problem != "" {
		return v, field, []Violation{{Message: problem}}, nil
	}
	s := e.versions[v]
	if ev.DataBase64 != "" {
		return v, "data", []Violation{{Keyword: "type", Message: "the data is binary (data_base64); the schema describes JSON data"}}, nil
	}
	data := []byte(ev.Data)
	if len(data) == 0 {
		data = []byte("null") // no data: checked as null
	}
	vs, err := s.CheckJSONWithin(data, w)
	if len(vs) == 0 {
		return v, "", nil, err
	}
	return v, vs[0].Field(), vs, nil
}

// version returns the version ev asks for: its dataschema's, when that is
// a version's $id or ends in /v{N}; else its dataversion's (Event Grid's
// dataVersion), when that is N, vN or N.0; else the newest. A version
// asked for that the type does not have is a problem naming the
// attribute; a newest stored that does not compile, one naming type.
func (e *entry) version(ev event.Event) (v int, field, problem string) {
	if ds := ev.DataSchema; ds != "" {
		if v, ok := e.byID[ds]; ok {
			return v, "", ""
		}
		if i := strings.LastIndex(ds, "/v"); i >= 0 {
			if n, ok := versionNumber(ds[i+2:]); ok {
				return e.known(n, "dataschema")
			}
		}
	}
	if dv, _ := ev.Extensions["dataversion"].(string); dv != "" {
		if n, ok := versionNumber(strings.TrimPrefix(strings.TrimSuffix(dv, ".0"), "v")); ok {
			return e.known(n, "dataversion")
		}
	}
	if e.versions[e.newest] == nil { // stored, but it does not compile any more (Catalog.Refresh)
		return e.newest, "type", fmt.Sprintf("version %d, the newest of %s, does not compile with this Herald (its log says why): "+
			"name a version that does (dataschema, dataversion), or have an admin add a version", e.newest, e.name)
	}
	return e.newest, "", ""
}

// known returns n when the type has that version, else a problem naming
// field.
func (e *entry) known(n int, field string) (int, string, string) {
	if e.versions[n] != nil {
		return n, "", ""
	}
	have := make([]int, 0, len(e.versions))
	for v := range e.versions {
		have = append(have, v)
	}
	slices.Sort(have)
	return n, field, fmt.Sprintf("%s asks for version %d of %s, which the catalog does not have (it has %v)", field, n, e.name, have)
}

// versionNumber reads a version number: digits without a leading zero.
func versionNumber(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}
