package optim

// LRMul is the learning-rate multiplier of the reference's
// Hyperparameters.lr_mul: 1 until the warm-down, then a linear decay to 0.
//
// With no wall-clock cap (maxWallclockSeconds ≤ 0) the warm-down is the last
// warmdownIters iterations:
//
//	start = max(iterations − warmdownIters, 0)
//	mul   = max((iterations − step)/max(warmdownIters, 1), 0)  if start ≤ step < iterations
//	        1                                                  otherwise
//
// With a cap, the warm-down is the last warmdownIters steps' worth of time,
// estimated from the mean step time so far:
//
//	stepMs      = elapsedMs/max(step, 1)
//	warmdownMs  = warmdownIters·stepMs
//	remainingMs = max(1000·maxWallclockSeconds − elapsedMs, 0)
//	mul         = remainingMs/max(warmdownMs, 1e-9)  if remainingMs ≤ warmdownMs, else 1
//
// warmdownIters ≤ 0 disables the warm-down (mul = 1).
func LRMul(step int, elapsedMs float64, iterations, warmdownIters int, maxWallclockSeconds float64) float64 {
	if warmdownIters <= 0 {
		return 1
	}
	if maxWallclockSeconds <= 0 {
		start := max(iterations-warmdownIters, 0)
		if start <= step && step < iterations {
			return max(float64(iterations-step)/float64(max(warmdownIters, 1)), 0)
		}
		return 1
	}
	stepMs := elapsedMs / float64(max(step, 1))
	warmdownMs := float64(warmdownIters) * stepMs
	remainingMs := max(1000*maxWallclockSeconds-elapsedMs, 0)
	if remainingMs <= warmdownMs {
		return remainingMs / max(warmdownMs, 1e-9)
	}
	return 1
}
