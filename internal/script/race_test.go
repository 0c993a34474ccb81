//go:build race

package script

// raceEnabled: the race detector multiplies what a test sees allocated.
const raceEnabled = true
