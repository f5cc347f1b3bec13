package filter

// Data-driven tests (internal/datadriven): each file in testdata/ is a
// sequence of cases
//
//	command
//	input lines
//	----
//	expected output
//
// separated by blank lines; lines starting with # are comments.
//
// Commands:
//
//	event              The input (lines joined) is the stored payload of the
//	                   event the next match cases read. Prints what the
//	                   event holds: its attributes and whether its data is
//	                   JSON.
//	match              The input holds filters, one JSON object a line; they
//	                   are compiled as one list and matched against the
//	                   current event. Prints "match", or "no match: [i]
//	                   reason" (Explain's index and reason).
//	compile            The input (lines joined) is an advanced_filters list.
//	                   Prints "ok: N filters", "no filters", or the
//	                   FieldError: "error: field: detail".
//
// Every match case is also checked, failing the test when any disagrees
// with Explain's answer, against: Match on a fresh Event, Match and Explain
// on one Event shared by all the file's cases for that event (the
// parse-once cache), each filter compiled alone (the list is their AND, and
// Explain names the first that fails), and the reference implementation
// in ref_test.go.
//
// Run with -rewrite to replace every expected output by the actual one,
// then review the diff against the rules in the package comment:
//
//	go test ./internal/filter -run DataDriven -rewrite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/datadriven"
)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "*"), func(t *testing.T, path string) {
		r := &ddRunner{}
		datadriven.RunFile(t, path, r.do)
	})
}

type ddRunner struct {
	payload []byte
	shared  *Event // the current event, read by every match case
}

func (r *ddRunner) do(c *datadriven.Case) (string, error) {
	switch strings.TrimSpace(c.Cmd) {
	case "event":
		r.payload = []byte(strings.Join(c.Input, "\n"))
		r.shared = NewEvent(r.payload)
		return describeEvent(r.payload), nil
	case "match":
		return r.match(c.Input)
	case "compile":
		m, err := Compile(json.RawMessage(strings.Join(c.Input, "\n")))
		if err != nil {
			fe, ok := err.(*FieldError)
			if !ok {
				return "", fmt.Errorf("Compile returned %T, not *FieldError: %v", err, err)
			}
			if m != nil {
				return "", fmt.Errorf("Compile returned a Matcher with its error")
			}
			return "error: " + fe.Field + ": " + fe.Detail, nil
		}
		if m == nil {
			return "no filters", nil
		}
		if m.Len() == 1 {
			return "ok: 1 filter", nil
		}
		return fmt.Sprintf("ok: %d filters", m.Len()), nil
	}
	return "", fmt.Errorf("unknown command %q", c.Cmd)
}

func (r *ddRunner) match(lines []string) (string, error) {
	if r.payload == nil {
		return "", fmt.Errorf("match before any event")
	}
	raw := "[" + strings.Join(lines, ",") + "]"
	m, err := Compile(json.RawMessage(raw))
	if err != nil {
		return "", fmt.Errorf("compile: %v", err)
	}
	var filters []Filter
	if err := json.Unmarshal([]byte(raw), &filters); err != nil {
		return "", err
	}

	failed, why := m.Explain(NewEvent(r.payload))
	if (failed < 0) != (why == "") {
		return "", fmt.Errorf("Explain returned %d, %q", failed, why)
	}
	if got := m.Match(NewEvent(r.payload)); got != (failed < 0) {
		return "", fmt.Errorf("Match on a fresh event says %v, Explain %d", got, failed)
	}
	if got := m.Match(r.shared); got != (failed < 0) {
		return "", fmt.Errorf("Match on the shared event says %v, Explain %d", got, failed)
	}
	if f2, why2 := m.Explain(r.shared); f2 != failed || why2 != why {
		return "", fmt.Errorf("Explain on the shared event says %d %q, on a fresh one %d %q", f2, why2, failed, why)
	}
	first := -1
	for i, line := range lines {
		one, err := Compile(json.RawMessage("[" + line + "]"))
		if err != nil {
			return "", err
		}
		if !one.Match(r.shared) && first < 0 {
			first = i
		}
	}
	if first != failed {
		return "", fmt.Errorf("filters compiled alone: the first that fails is %d, Explain says %d", first, failed)
	}
	if ref := refMatch(filters, r.payload); ref != failed {
		return "", fmt.Errorf("the reference implementation's first failing filter is %d, Explain says %d (%s)", ref, failed, why)
	}
	if failed < 0 {
		return "match", nil
	}
	return fmt.Sprintf("no match: [%d] %s", failed, why), nil
}

// describeEvent lists the attributes of the event and says whether its
// data is JSON, as the package reads them.
func describeEvent(payload []byte) string {
	ev := NewEvent(payload)
	ev.parse()
	names := make([]string, 0, len(ev.attrs))
	for k := range ev.attrs {
		names = append(names, k+"="+show(ev.attrs[k]))
	}
	slices.Sort(names)
	data := "data: JSON"
	switch {
	case ev.noData == noDataAbsent:
		data = "data: none"
	case ev.noData == noDataNotJSON:
		data = "data: not JSON"
	default:
		if _, ok := decodeValue(ev.data); !ok {
			data = "data: not valid JSON"
		}
	}
	if len(names) == 0 {
		return "no attributes\n" + data
	}
	return strings.Join(names, " ") + "\n" + data
}
