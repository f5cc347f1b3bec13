package driver

import (
	"fmt"
	"strconv"
	"strings"
)

// WhereMarker is the comment a statement holds where Where puts its
// conditions. A statement with the marker runs as it is (the marker is a
// comment) when no condition is given.
const WhereMarker = "/*where*/"

// whereSep and andSep separate a composed statement's name from its base
// and its conditions: names never hold a space.
const (
	whereSep = " WHERE "
	andSep   = " AND "
)

// Where names the statement made of base, whose text holds WhereMarker,
// and the conditions conds, each a statement of its own holding one
// condition (of the tables base reads): the marker becomes WHERE and the
// conditions' texts, each in parentheses, joined with AND. A condition
// may be given more than once. The composed statement's parameters are
// each condition's, in the order given, then base's: the driver numbers
// them anew ($n, ?n). A base may hold the marker more than once (the arms
// of a UNION ALL, each with every condition): each gets the same text,
// with the same parameter numbers, so the arguments are given once. This
// is how the engine writes a list's filters once while each driver keeps
// its dialect's conditions (see engine/reads.go).
func Where(base Query, conds ...Query) Query {
	if len(conds) == 0 {
		return base
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = string(c)
	}
	return base + whereSep + Query(strings.Join(parts, andSep))
}

// compose returns the text of a statement named by Where, or false when q
// is not such a name.
func (qs Queries) compose(q Query) (string, bool, error) {
	base, rest, ok := strings.Cut(string(q), whereSep)
	if !ok {
		return "", false, nil
	}
	text, ok := qs[Query(base)]
	if !ok || !strings.Contains(text, WhereMarker) {
		return "", true, fmt.Errorf("store driver: no statement named %q with a %s", base, WhereMarker)
	}
	var b strings.Builder
	n := 0
	for i, c := range strings.Split(rest, andSep) {
		cond, ok := qs[Query(c)]
		if !ok {
			return "", true, fmt.Errorf("store driver: no condition named %q", c)
		}
		if i == 0 {
			b.WriteString("WHERE (")
		} else {
			b.WriteString(" AND (")
		}
		var used int
		cond, used = renumber(cond, n)
		b.WriteString(cond)
		b.WriteString(")")
		n += used
	}
	text, _ = renumber(text, n)
	return strings.ReplaceAll(text, WhereMarker, b.String()), true, nil
}

// renumber adds by to the number of every parameter of text ($n or ?n,
// outside quoted literals) and returns it with the largest number it had.
func renumber(text string, by int) (string, int) {
	var b strings.Builder
	most := 0
	quoted := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\'' {
			quoted = !quoted
		}
		if quoted || (c != '$' && c != '?') {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j == i+1 {
			b.WriteByte(c)
			continue
		}
		v, _ := strconv.Atoi(text[i+1 : j])
		most = max(most, v)
		b.WriteByte(c)
		b.WriteString(strconv.Itoa(v + by))
		i = j - 1
	}
	return b.String(), most
}
