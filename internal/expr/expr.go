// Package expr compiles and evaluates a subscription's CEL expressions
// (docs/subscriptions.md, "Transform and filter expression"): its
// transform, which reshapes the data a subscriber receives, and its
// filter_expression, a boolean ANDed with the other filters. They are
// written in CEL (the Common Expression Language, cel.dev/cel-go);
// internal/filter holds the other filters (Event Grid's advanced filters).
//
// # Variables
//
// Both read two variables:
//
//   - event: the event's attributes as a map from name to value: id,
//     source, type, specversion, subject, time (an RFC 3339 string, as
//     stored), datacontenttype, dataschema and every extension (a string,
//     number or bool, as published). An attribute the event does not carry
//     (or carries as null) is not in the map: event.subject on an event
//     without one is a runtime error, has(event.subject) is false.
//   - data: the event's data: the JSON value of its "data" member (an
//     object is a map, an array a list, a JSON string a string whatever the
//     datacontenttype), bytes for data_base64, null when it has none.
//
// JSON numbers are CEL doubles (as google.protobuf.Value's are): data.n ==
// 1 and data.n > 0 compare across types, but arithmetic does not mix them
// (data.n + 1.0, or int(data.n) + 1). Besides CEL's standard library,
// expressions may call the strings, encoders and math extensions of
// cel-go's ext package and use optional values (data.?a.orValue(0)).
//
// # Bounds
//
// An expression is at most MaxSourceBytes (4 KiB) of UTF-8 and must
// compile: a *CompileError carries CEL's message and the position (line and
// column, from 1) it points at. Each evaluation may spend at most CostLimit
// units of cel-go's runtime cost (about one per operation and per ten bytes
// of a string it scans or builds; bounds.go charges the calls cel-go
// charged one unit whatever they read or built); over it, the evaluation
// fails. replace, join and format fail rather than build more than
// MaxValueBytes, and matches rather than run a match over the cost limit
// or compile a regular expression over MaxPatternBytes. A transform's output, encoded as JSON, is at most
// MaxOutputBytes (1 MiB, the event size bound). A failed evaluation is an
// *EvalError whose Kind says why.
//
// # Results
//
// A transform's result becomes the delivered data: a map (with string
// keys), a list, a string, a number, a bool, or values nested of those
// (bytes are written in base64, timestamps in RFC 3339 and durations as
// "1.5s", as google.protobuf.Value's JSON mapping writes them). null skips
// the event for the subscription. A filter expression's result must be a
// bool: true matches, false does not.
//
// Programs are immutable and safe for concurrent use: internal/catalog
// compiles a subscription's once per version (its Entry) and every worker
// shares them.
package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// Bounds of an expression and its evaluation.
const (
	// MaxSourceBytes is the longest expression accepted, in bytes.
	MaxSourceBytes = 4 << 10
	// CostLimit is the cel-go runtime cost one evaluation may spend: the
	// per-call limit Kubernetes sets for its CEL validation rules
	// (1,000,000), far above what a reshaping of a 1 MiB event costs
	// (about a hundred units plus one per ten bytes scanned).
	CostLimit = 1_000_000
	// MaxOutputBytes is the largest transform output, as JSON: the 1 MiB
	// bound of a published event.
	MaxOutputBytes = 1 << 20
)

// CompileError is an expression that does not compile: too long, not
// UTF-8, empty, CEL's parse or type error, or a filter expression whose
// result cannot be a bool.
type CompileError struct {
	// Line and Column (from 1, in characters) are where the error is; 0
	// when it is about the whole expression.
	Line, Column int
	// Message is CEL's message (the first of its errors, with how many
	// more there were) or Herald's.
	Message string
}

// Error is the message, after its position when it has one: "line 1,
// column 6: undeclared reference to 'x' (in container ”)".
func (e *CompileError) Error() string {
	if e.Line == 0 {
		return e.Message
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// env is the CEL environment of every expression: its variables, the
// standard library and the extensions the package comment names, with
// the calls of bounds.go bounded. It is safe for concurrent use.
var env = func() *cel.Env {
	base, err := cel.NewEnv(
		cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("data", cel.DynType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		ext.Encoders(),
		ext.Math(),
	)
	if err != nil {
		panic("expr: CEL environment: " + err.Error())
	}
	e, err := base.Extend(boundedFunctions(base)...)
	if err != nil {
		panic("expr: CEL environment: " + err.Error())
	}
	return e
}()

// program is a compiled expression.
type program struct {
	src string
	prg cel.Program
}

// Source is the expression as written.
func (p *program) Source() string { return p.src }

// compile checks src's bounds, compiles it in env and plans its program
// with the cost limit; wantBool refuses an expression whose type is
// neither bool nor dynamic.
func compile(src string, wantBool bool) (program, error) {
	if err := checkSource(src); err != nil {
		return program{}, err
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return program{}, firstIssue(iss)
	}
	if wantBool {
		if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
			return program{}, &CompileError{Line: 1, Column: 1,
				Message: "the expression's result is " + t.String() + ", not a bool"}
		}
	}
	prg, err := env.Program(ast,
		cel.CostLimit(CostLimit),
		cel.CostTracking(sizeCost{}),
		cel.CustomDecoratorV2(boundedMatches),
		cel.InterruptCheckFrequency(interruptEvery),
	)
	if err != nil {
		return program{}, &CompileError{Message: err.Error()}
	}
	return program{src: src, prg: prg}, nil
}

// interruptEvery is how many comprehension iterations go between checks of
// an evaluation's context.
const interruptEvery = 100

// checkSource refuses an expression that is empty, too long or not UTF-8.
func checkSource(src string) error {
	switch {
	case strings.TrimSpace(src) == "":
		return &CompileError{Message: "the expression is empty"}
	case len(src) > MaxSourceBytes:
		return &CompileError{Message: fmt.Sprintf("the expression is %d bytes, more than %d", len(src), MaxSourceBytes)}
	case !utf8.ValidString(src):
		return &CompileError{Message: "the expression is not UTF-8"}
	}
	return nil
}

// firstIssue is the CompileError of iss's first error.
func firstIssue(iss *cel.Issues) *CompileError {
	errs := iss.Errors()
	first := errs[0]
	msg := first.Message
	if len(errs) > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
	}
	line, col := first.Location.Line(), first.Location.Column()+1
	if line <= 0 {
		line, col = 0, 0
	}
	return &CompileError{Line: line, Column: col, Message: msg}
}
