package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the single pass of parseObject: each member of an event
// object, whose raw JSON value is taken as it stands in the body (the body
// was checked to be valid JSON first), set on the Event.

// setMember sets the member key, whose value val is valid raw JSON other
// than null, on e; it returns why the member is refused, or "", and the
// path inside the value the reason is about ("" for the value itself; for
// data, the path of a repeated member: see dataJSON).
func (e *Event) setMember(name, val []byte) (detail, path string) {
	switch attr := string(name); attr {
	case attrSpecVersion, attrID, attrSource, attrType, attrSubject, attrDataContentType, attrDataSchema, attrTime:
		s, d := jsonString(val)
		if attr == attrSpecVersion && strings.HasPrefix(d, notString) {
			d = `must be the string "1.0"` + strings.TrimPrefix(d, notString)
		}
		if d != "" {
			return d, ""
		}
		return e.setAttr(attr, s), ""
	case memberData:
		data, repeated := dataJSON(val)
		if repeated != "" {
			return repeatedDetail, repeated
		}
		e.Data = data
	case memberDataBase64:
		s, d := jsonString(val)
		if strings.HasPrefix(d, notString) {
			d = "must be a base64 string" + strings.TrimPrefix(d, notString)
		}
		if d != "" {
			return d, ""
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return base64Detail(s, err), ""
		}
		e.DataBase64 = base64.StdEncoding.EncodeToString(b)
	default:
		if d := checkExtensionName(attr); d != "" {
			return d, ""
		}
		var v any
		switch val[0] {
		case '"':
			s, d := jsonString(val)
			if d != "" {
				return d, ""
			}
			v = s
		case 't':
			v = true
		case 'f':
			v = false
		case '{', '[':
			return "extension values must be a string, number or boolean", ""
		default:
			v = json.Number(val)
		}
		if e.Extensions == nil {
			e.Extensions = make(map[string]any)
		}
		e.Extensions[attr] = v
	}
	return "", ""
}

// setAttr sets the context attribute attr (one of those CloudEvents
// defines) to its string value v, whether it came from a JSON member or a
// binary-mode header; it returns why v is refused, or "". The optional
// attributes must not be empty when present; time must be RFC 3339.
func (e *Event) setAttr(attr, v string) string {
	switch attr {
	case attrSubject, attrDataContentType, attrDataSchema, attrTime:
		if v == "" {
			return "must not be empty when present"
		}
	}
	switch attr {
	case attrSpecVersion:
		e.SpecVersion = v
	case attrID:
		e.ID = v
	case attrSource:
		e.Source = v
	case attrType:
		e.Type = v
	case attrSubject:
		e.Subject = v
	case attrDataContentType:
		e.DataContentType = v
	case attrDataSchema:
		e.DataSchema = v
	case attrTime:
		t, d := parseTime(v)
		if d != "" {
			return d
		}
		e.Time = t
	}
	return ""
}

// repeatedDetail is the detail of a problem naming a repeated member.
const repeatedDetail = "repeated member; a member name may appear only once in an object"

// dataJSON returns the JSON data val (valid JSON) without whitespace
// outside its strings (val itself, its capacity cut to its length so that
// nothing appends into the body it points into, when it has none: the usual
// case; else a compacted copy) and, when an object in val repeats a member
// name, the path of the first repeated member relative to val (".a",
// ".x.a", "[2].a"), else "". Names are compared as encoding/json decodes
// them ("a" and "\u0061" are the same name), so refusing repeats leaves no
// member that a filter, which reads the last, and a receiver keeping the
// first would see differently. The check rides the pass that looks for
// whitespace: its cost is linear in val's size (an object's names are
// compared one by one while it has few, then kept in a map).
func dataJSON(val []byte) ([]byte, string) {
	compact, at := scanData(val)
	if at >= 0 {
		return nil, pathTo(val, at)
	}
	if compact {
		return val[:len(val):len(val)], ""
	}
	var buf bytes.Buffer
	buf.Grow(len(val))
	_ = json.Compact(&buf, val) // val is valid JSON: cannot fail
	return buf.Bytes(), ""
}

// scanData walks val, valid JSON, once: it reports whether val has no
// whitespace outside its strings, and the offset of the key of the first
// member whose name its object already had (-1: none).
func scanData(val []byte) (compact bool, repeated int) {
	var namesBuf [2 * fewNames][]byte
	var objectsBuf [8]objectNames
	names := namesBuf[:0]     // the names of the open objects that have few
	objects := objectsBuf[:0] // the open objects, innermost last
	var open containerStack   // val is valid: at most maxNestingDepth deep
	key := false              // the next string is a member name
	compact = true
	for i := 0; i < len(val); i++ {
		switch val[i] {
		case ' ', '\t', '\r', '\n':
			compact = false
		case '"':
			end, esc := scanString(val, i)
			if key {
				key = false
				var ok bool
				if names, ok = objects[len(objects)-1].add(names, memberName(val[i:end], esc)); !ok {
					return compact, i
				}
			}
			i = end - 1
		case '{':
			open.push(true)
			objects = append(objects, objectNames{first: len(names)})
			key = true
		case '[':
			open.push(false)
		case '}':
			open.pop()
			names = names[:objects[len(objects)-1].first]
			objects = objects[:len(objects)-1]
			key = false // an empty object
		case ']':
			open.pop()
		case ',':
			key = open.inObject()
		}
	}
	return compact, -1
}

// memberName returns the name a member's key literal (quotes included)
// stands for, as encoding/json decodes it: the literal's content when it
// has no escapes (esc false), else the decoded string (an unpaired
// surrogate escape becoming U+FFFD, as encoding/json makes it).
func memberName(lit []byte, esc bool) []byte {
	if !esc {
		return lit[1 : len(lit)-1]
	}
	var s string
	_ = json.Unmarshal(lit, &s) // a valid JSON string: cannot fail
	return []byte(s)
}

// pathTo names the member whose key starts at val[at] (val valid JSON) by
// its path from val: ".name" for each object member on the way (a name cut
// to 64 bytes), "[i]" for each array element; a path longer than
// maxPathLen keeps its start and its end around "...". It is the error
// path of dataJSON, a walk of its own.
func pathTo(val []byte, at int) string {
	type step struct {
		object bool
		name   []byte // the current member's name
		index  int    // the current element's index
	}
	var path []step
	key := false
	for i := 0; i < len(val); i++ {
		switch val[i] {
		case '"':
			end, esc := scanString(val, i)
			if key {
				key = false
				path[len(path)-1].name = memberName(val[i:end], esc)
				if i == at {
					var b strings.Builder
					for _, s := range path {
						if !s.object {
							b.WriteString("[" + strconv.Itoa(s.index) + "]")
							continue
						}
						b.WriteByte('.')
						if len(s.name) > 64 {
							b.Write(s.name[:64])
							b.WriteString("...")
							continue
						}
						b.Write(s.name)
					}
					return shortPath(b.String())
				}
			}
			i = end - 1
		case '{', '[':
			path = append(path, step{object: val[i] == '{'})
			key = val[i] == '{'
		case '}', ']':
			path = path[:len(path)-1]
			key = false
		case ',':
			top := &path[len(path)-1]
			top.index++
			key = top.object
		}
	}
	return ""
}

// maxPathLen bounds the paths pathTo writes, in bytes (without "...").
const maxPathLen = 256

// shortPath cuts a path longer than maxPathLen to its first and last
// maxPathLen/2 bytes (on character boundaries) around "...".
func shortPath(p string) string {
	if len(p) <= maxPathLen {
		return p
	}
	head, tail := maxPathLen/2, len(p)-maxPathLen/2
	for head > 0 && !utf8.RuneStart(p[head]) {
		head--
	}
	for tail < len(p) && !utf8.RuneStart(p[tail]) {
		tail++
	}
	return p[:head] + "..." + p[tail:]
}

// objectNames tells the repeated member names of one JSON object in a walk
// over JSON. Its names are compared one by one while it has at most
// fewNames, kept in a slice shared by the objects open in the walk (slices
// of the input: no copy; an object's names follow those of the objects
// around it, and go when it closes), then in a map of its own: so neither
// an object of thousands of members nor thousands of nested objects cost
// quadratic time.
type objectNames struct {
	first int                 // its first name in the shared slice
	many  map[string]struct{} // its names once it has more than fewNames
}

// fewNames is the most names of an object compared one by one.
const fewNames = 16

// add adds name to the object, whose names are names[o.first:] while it has
// few; it returns names, grown, and whether name was new to the object.
// (names is passed and returned, as with append, so that a walk can keep it
// in a local array.)
func (o *objectNames) add(names [][]byte, name []byte) ([][]byte, bool) {
	if o.many != nil {
		if _, ok := o.many[string(name)]; ok {
			return names, false
		}
		o.many[string(name)] = struct{}{}
		return names, true
	}
	own := names[o.first:]
	for _, n := range own {
		if string(n) == string(name) {
			return names, false
		}
	}
	if len(own) < fewNames {
		return append(names, name), true
	}
	o.many = make(map[string]struct{}, 2*fewNames)
	for _, n := range own {
		o.many[string(n)] = struct{}{}
	}
	o.many[string(name)] = struct{}{}
	return names, true
}

// arrayElements returns the raw elements of p, a valid JSON array (leading
// whitespace removed).
func arrayElements(p []byte) [][]byte {
	var out [][]byte
	i := skipWS(p, 1)
	if i < len(p) && p[i] == ']' {
		return out
	}
	for i < len(p) {
		end := scanValue(p, i)
		if end < 0 {
			return out // cannot happen for valid JSON
		}
		out = append(out, p[i:end])
		i = skipWS(p, end)
		if i >= len(p) || p[i] != ',' {
			return out
		}
		i = skipWS(p, i+1)
	}
	return out
}
