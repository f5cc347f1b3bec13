// Package eventtype is Herald's catalog of event types: the EventType an
// admin describes (a name, a description, a group, JSON Schema 2020-12
// versions of its data, examples), the rules of its fields (input.go), the
// compiled schemas a publish is checked against (schema.go, catalog.go),
// the check itself per an account's settings (check.go), and the catalog
// as an AsyncAPI 3.0 document (asyncapi.go). docs/event-types.md is the
// user's view.
//
// The schemas are compiled by github.com/santhosh-tekuri/jsonschema/v6
// (draft 2020-12 unless a schema's $schema names another draft), never by
// hand, and loaded from nothing but the catalog: a $ref to any other
// document (a URL, a file) does not compile.
package eventtype

import (
	"encoding/json"
	"slices"
	"time"
)

// Bounds of the catalog. Every node holds the whole catalog compiled, and
// the AsyncAPI document answers it whole: MaxCatalogBytes bounds it, well
// below MaxEventTypes × MaxVersions × MaxSchemaBytes; only admin keys
// write it.
const (
	// MaxCatalogBytes bounds the descriptions, groups, schemas and
	// examples of every type together (archived ones included), as
	// stored (16 MiB).
	MaxCatalogBytes = 16 << 20
	// MaxEventTypes bounds the event types an installation's catalog
	// holds, archived ones included.
	MaxEventTypes = 1000
	// MaxSchemaBytes bounds one schema version, as sent (64 KiB).
	MaxSchemaBytes = 64 << 10
	// MaxVersions bounds an event type's schema versions; a version
	// number is from 1 to MaxVersions.
	MaxVersions = 32
	// MaxExamples bounds an event type's examples.
	MaxExamples = 10
	// MaxExampleBytes bounds one example, as sent.
	MaxExampleBytes = 64 << 10
	// MaxDescriptionLen bounds a description, in bytes.
	MaxDescriptionLen = 2000
	// MaxGroupLen bounds a group's name, in bytes.
	MaxGroupLen = 200
)

// EventType is one type of the catalog.
type EventType struct {
	// Name is the CloudEvents type the entry describes ("invoice.paid"),
	// unique; it never changes.
	Name        string
	Description string
	// Group gathers types in the console and portal ("" for none).
	Group string
	// Schemas are the versions of the data's JSON Schema, by number from
	// 1; a version once stored never changes.
	Schemas map[int]json.RawMessage
	// Examples are examples of the data, valid against the newest version.
	Examples   []json.RawMessage
	Deprecated bool
	// ArchivedAt is when the type was archived (DELETE); zero while it is
	// not. An archived type is listed only on request and refused in new
	// subscriptions when an account takes catalog types only; events of
	// it are still accepted, checked and delivered.
	ArchivedAt time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Revision counts the type's writes (1 when created): a write of a
	// type read at an older revision is refused (store.ErrConflict), so
	// that two writers adding the same version cannot both succeed.
	Revision int64
}

// Versions returns the type's version numbers in order.
func (t EventType) Versions() []int {
	vs := make([]int, 0, len(t.Schemas))
	for v := range t.Schemas {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// Newest returns the type's highest version number, 0 when it has none.
func (t EventType) Newest() int {
	n := 0
	for v := range t.Schemas {
		n = max(n, v)
	}
	return n
}

// Archived reports whether the type is archived.
func (t EventType) Archived() bool { return !t.ArchivedAt.IsZero() }
