//go:build race

package quorum

// modelUnderRace: the race detector makes the model's explorer, which runs
// on one goroutine, ten times slower and can find nothing in it.
const modelUnderRace = true
