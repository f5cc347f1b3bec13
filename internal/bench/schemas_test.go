package bench

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/eventtype"
)

func TestSchemaEnforcedRegistered(t *testing.T) {
	if !slices.Contains(Scenarios, "schema-enforced") || scenarioFuncs["schema-enforced"] == nil || !strings.Contains(ScenarioHelp(), "2 KB schema") {
		t.Error("schema-enforced is not in all, registered, or described")
	}
	if all, err := ParseScenarios("all"); err != nil || !slices.Contains(all, "schema-enforced") {
		t.Errorf("all: %v, %v", all, err)
	}
	if d := defaultTimeout("schema-enforced", DefaultSizes()); d < 3*time.Minute {
		t.Errorf("schema-enforced's deadline %v: two runs of steady-batch's load", d)
	}
}

// TestSchemaData: invoiceSchema is about 2 KB and compiles; the bench's
// invoices, as published and stored, are valid against it at every size
// and keep their size; one that breaks it is caught (the check can fail).
func TestSchemaData(t *testing.T) {
	if n := len(invoiceSchema); n < 1800 || n > 2600 {
		t.Errorf("invoiceSchema is %d bytes; want about 2 KB", n)
	}
	s, err := eventtype.Compile([]byte(invoiceSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 512, 2048} {
		d := schemaData(size)
		if size >= 600 && len(d) != size {
			t.Errorf("schemaData(%d) is %d bytes", size, len(d))
		}
		l := &load{prefix: "se.x-", events: 10, batch: 1, data: d, typeOf: typeName}
		h := http.Header{}
		h.Set("Content-Type", "application/cloudevents+json")
		evs, err := event.Parse(h, l.body(nil, 3, 4, time.Now().UnixNano()))
		if err != nil {
			t.Fatal(err)
		}
		if vs := s.CheckJSON(evs[0].Data); len(vs) != 0 {
			t.Errorf("schemaData(%d) breaks the schema: %+v", size, vs)
		}
	}
	bad := strings.Replace(string(schemaData(512)), `"quantity":5`, `"quantity":0`, 1)
	if vs := s.CheckJSON([]byte(bad)); len(vs) != 1 || vs[0].Pointer != "/lines/1/quantity" {
		t.Errorf("an invoice with a quantity of 0: %+v", vs)
	}
}
