//go:build race

package attempting

// The race detector's instrumentation allocates: allocation budgets hold
// without it only.
func init() { raceBuild = true }
