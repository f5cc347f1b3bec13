//go:build !unix

package enginetest

import "time"

// processCPU is zero where getrusage is not available: the benchmarks'
// CPU figures then read as zero.
func processCPU() time.Duration { return 0 }
