//go:build race

package checkpoint

// raceEnabled: built for the race detector, bytes.Buffer's growth
// allocates each new buffer twice (its make-and-append is not fused), so
// allocation bounds are loosened.
const raceEnabled = true
