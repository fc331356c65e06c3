//go:build !race

package paxos

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = false
