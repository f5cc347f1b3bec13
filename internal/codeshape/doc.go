// Package codeshape holds only the test of the code's shape rules; it has
// no code of its own. The test (shape_test.go) parses every .go file of the
// module with go/parser and fails, naming file:line, for:
//   - a function or method (or function literal) over 90 lines, test files
//     included;
//   - a type with more than 20 methods, except the store backends' types
//     (Store and the writers in internal/store/sqlite and
//     internal/store/postgres) and the API's handlers (internal/api.Server);
//   - a comment citing a document outside the repository (the design
//     document, the shared seeds);
//   - code outside internal/store, test files aside, that picks a store by
//     its URL: a string literal "postgres://" or "postgresql://", or a
//     comparison with "sqlite".
//
// There is no allow-list: every violation fails the test.
package codeshape
