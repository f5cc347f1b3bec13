//go:build !race

package server_test

// raceDetector: see race_on_test.go.
const raceDetector = false
