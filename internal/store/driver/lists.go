package driver

import "context"

// Lister is a Driver whose database plans a statement once for every
// argument it may get unless told not to (PostgreSQL's generic plans of
// prepared statements): ListSnapshot is Snapshot with every statement
// planned for the arguments it runs with, which the pages of a list need
// (the best plan of a page depends on them: a small account's deliveries
// are found through the account's index, a large account's by reading the
// newest deliveries until the page is full). A driver that plans every
// statement for its arguments anyway (SQLite) need not be one: the engine
// then takes a Snapshot.
type Lister interface {
	ListSnapshot(ctx context.Context, fn func(x Executor) error) error
}
