// Package check holds the Helm chart deploy/helm/herald to Kubernetes' own
// types: its tests render the chart with `go tool helm template` (helm pinned
// in this directory's go.mod, a module of its own so that the main module
// needs neither helm nor k8s.io) under several sets of values, decode every
// rendered manifest strictly into its k8s.io/api type (Decode: an unknown
// kind, an unknown or misspelt field, or a duplicated one fails), and check
// what the objects mean together: the probes, the Secret and environment
// wiring, the selectors and the replicas. .ci/run runs them.
package check
