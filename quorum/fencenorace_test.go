//go:build !race

package quorum

const modelUnderRace = false
