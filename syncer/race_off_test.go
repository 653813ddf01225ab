//go:build !race

package syncer_test

// raceDetector reports whether the tests run under the race detector (go test -race).
const raceDetector = false
