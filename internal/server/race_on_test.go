//go:build race

package server_test

// raceDetector: the tests run with -race, which slows the store several
// times over; bounds in wall-clock time are left to runs without it.
const raceDetector = true
