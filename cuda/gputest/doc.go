// Package gputest holds the CUDA backend's checks that need a real NVIDIA
// GPU, behind the build tag cuda: the conformance suite in every dtype and
// flavour, the tc flavour's attention against its error model, two
// training steps against the CPU backend in every dtype, the real training
// loop's host waits and device allocations per step, and the kernel
// cache's second start. Where no device opens (CI; any machine without a
// driver; the stand-in driver of package cuda/standin) every test reports
// itself skipped with the reason, never passed; GOLF_REQUIRE_GPU=1 makes
// that a failure, which is how scripts/gpu_check.sh runs them. The CPU
// emulator runs the same checks over the stand-in in every CI run
// (package cuda/standin); here they meet the hardware: the real tensor
// cores, the driver's launch checks, cuBLASLt's heuristics.
//
// Only tests are here; build them for a GPU machine with
//
//	CGO_ENABLED=0 go test -c -tags cuda -o gputest.test ./cuda/gputest
package gputest
