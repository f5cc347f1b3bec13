package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/herald-events/herald/client"
)

// maxListAll bounds what a list with --all fetches: it stops after the
// page that brings it to this many items, and says the cursor to go on
// from on stderr.
const maxListAll = 100_000

// maxCell bounds a table cell, in runes; a longer value is cut, "…" at the
// end (-o json shows it whole).
const maxCell = 60

// column is one column of a verb's table: its header and the JSON member
// of the item it shows (a dotted path).
type column struct{ header, path string }

// listPage is a list's answer as the CLI prints it: the API's page, its
// items as the client decoded them.
type listPage struct {
	Data       []json.RawMessage `json:"data"`
	NextCursor string            `json:"next_cursor"`
}

// deleted is the answer of a verb whose operation answers no body.
type deleted struct{ id string }

// call runs the verb and returns what the API answered: a list verb's
// page, or with --all every page up to maxListAll items (a note on stderr
// when it stops short); deleted for an answer without a body; else the
// answer's JSON as sent.
func (v *verb) call(ctx context.Context, c *call, stderr io.Writer) (any, error) {
	if !v.list {
		res, err := v.run(ctx, c)
		if d, ok := res.(deleted); ok || err != nil {
			return d, err
		}
		return json.RawMessage(bytes.Clone(c.answer.body.Bytes())), nil
	}
	all, _ := c.set["all"].(bool)
	out := listPage{Data: []json.RawMessage{}}
	for {
		if _, err := v.run(ctx, c); err != nil {
			return nil, err
		}
		var p listPage
		if err := json.Unmarshal(c.answer.body.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("the answer is not a page: %v", err)
		}
		out.Data, out.NextCursor = append(out.Data, p.Data...), p.NextCursor
		if !all || p.NextCursor == "" || p.NextCursor == c.page.Cursor {
			return out, nil
		}
		if len(out.Data) >= maxListAll {
			fmt.Fprintf(stderr, "%s: --all stopped at %d items, its bound\n", c.name(), len(out.Data))
			return out, nil
		}
		c.page.Cursor = p.NextCursor
	}
}

func (c *call) name() string { return "herald " + c.res.name + " " + c.verb.name }

// printResult prints what a verb answered, as -o says: json, indented, or
// a table of the verb's columns (KEY VALUE lines for a verb without).
// A list's table is followed, on stderr, by the next page's command.
func printResult(stdout, stderr io.Writer, c *call, result any) error {
	var rows []json.RawMessage
	switch r := result.(type) {
	case deleted:
		if c.out == "table" {
			fmt.Fprintf(stdout, "%s %s: done\n", c.verb.name, r.id)
		}
		return nil
	case listPage:
		if c.out == "json" {
			return printJSON(stdout, r)
		}
		rows = r.Data
	case json.RawMessage:
		if c.out == "json" {
			return printJSON(stdout, r)
		}
		if len(c.verb.columns) == 0 {
			return printFields(stdout, r)
		}
		rows = []json.RawMessage{r}
		if c.verb.rows != "" {
			var obj map[string][]json.RawMessage
			if err := json.Unmarshal(r, &obj); err != nil {
				return fmt.Errorf("the answer has no list %s: %v", c.verb.rows, err)
			}
			rows = obj[c.verb.rows]
		}
	}
	if err := printTable(stdout, c.verb.columns, rows); err != nil {
		return err
	}
	if p, ok := result.(listPage); ok && p.NextCursor != "" {
		fmt.Fprintf(stderr, "%s: more: the next page is --cursor %s\n", c.name(), p.NextCursor)
	}
	return nil
}

// printJSON prints v as indented JSON, its raw parts as the API wrote them.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// printTable prints rows (JSON objects) under cols' headers.
func printTable(w io.Writer, cols []column, rows []json.RawMessage) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	heads := make([]string, len(cols))
	for i, col := range cols {
		heads[i] = col.header
	}
	fmt.Fprintln(tw, strings.Join(heads, "\t"))
	for _, raw := range rows {
		item, err := decodeObject(raw)
		if err != nil {
			return err
		}
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = cell(lookup(item, col.path))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// printFields prints an object's members, one KEY VALUE line each, in name
// order.
func printFields(w io.Writer, raw json.RawMessage) error {
	item, err := decodeObject(raw)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", strings.ToUpper(k), cell(item[k]))
	}
	return tw.Flush()
}

func decodeObject(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the answer is not an object: %v", err)
	}
	return m, nil
}

// lookup returns the member at a dotted path of item, nil when absent. A
// name ending in "[]" is a list, the rest of the path looked up in each
// of its items ("schema_errors[].keyword": the keyword of each; nil when
// the list is absent or empty).
func lookup(item map[string]any, path string) any {
	var v any = item
	for i, name := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		list, isList := strings.CutSuffix(name, "[]")
		if !isList {
			v = m[name]
			continue
		}
		items, _ := m[list].([]any)
		if len(items) == 0 {
			return nil
		}
		rest := strings.Join(strings.Split(path, ".")[i+1:], ".")
		out := make([]any, len(items))
		for j, it := range items {
			if o, ok := it.(map[string]any); ok && rest != "" {
				out[j] = lookup(o, rest)
			} else {
				out[j] = it
			}
		}
		return out
	}
	return v
}

// cell writes a JSON value for a table: "-" for null, absent or empty,
// a list of strings joined with commas, other lists and objects as JSON,
// control characters and tabs escaped, at most maxCell runes.
func cell(v any) string {
	var s string
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		s = v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			if str, ok := e.(string); ok {
				parts[i] = str
			} else {
				b, _ := json.Marshal(e)
				parts[i] = string(b)
			}
		}
		s = strings.Join(parts, ",")
	case map[string]any:
		b, _ := json.Marshal(v)
		s = string(b)
	default:
		s = fmt.Sprint(v)
	}
	if s == "" {
		return "-"
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strconv.Quote(s)
	}
	if r := []rune(s); len(r) > maxCell {
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}

// printAPIError says what went wrong with a call on stderr (see
// describeError).
func printAPIError(w io.Writer, name string, err error) {
	fmt.Fprintf(w, "%s: %s\n", name, describeError(err))
}

// describeError is a problem's status, title, field and detail
// ("400 Invalid request (field url): must be …"), or err's text. A detail
// that names an API route names the herald command too (cliCommandFor):
// "…: GET /v1/subscriptions?name=puller (herald subscriptions list --name
// puller)".
func describeError(err error) string {
	var p *client.Problem
	if !errors.As(err, &p) {
		return err.Error()
	}
	s := fmt.Sprintf("%d %s", p.Status, p.Title)
	if p.Field != "" {
		s += " (field " + p.Field + ")"
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	if cmd := cliCommandFor(p.Detail); cmd != "" {
		s += " (" + cmd + ")"
	}
	return s
}
