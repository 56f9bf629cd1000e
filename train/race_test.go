//go:build race

package train

// raceEnabled: built for the race detector, whose runtime allocates and
// maps shadow memory beside the program's own, so the tests' allocation
// and peak-memory bounds do not apply.
const raceEnabled = true
