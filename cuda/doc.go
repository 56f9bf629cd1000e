// Package cuda is golf's CUDA backend for NVIDIA GPUs, a peer of package
// metal: the same op names, kernels in CUDA C++ (cuda/kernels/*.cu, one
// file per op family, with the kernel names of shaders/*.metal), and the
// same conformance suite.
//
// Nothing here needs cgo or a CUDA toolkit to build: the driver API
// (libcuda.so.1), NVRTC and cuBLASLt are loaded at run time with
// github.com/ebitengine/purego, in files behind the build tag `cuda`
// (go build -tags cuda ./cmd/golf, CGO_ENABLED=0 is fine). The untagged
// files are pure Go that every build tests:
//
//	backend.go       the Backend: one stream, device memory from size-class free lists,
//	                 double-buffered page-locked staging, launches from the launch table,
//	                 host waits counted (Stats)
//	<op>.go          the ops, one family per file as package metal and cuda/kernels:
//	                 accumulate, adam, attention, elementwise, embedding, linear, muon,
//	                 newton_schulz, qk_norm_rope, relu_sq, resid_mix, rmsnorm, scaled_add,
//	                 softcap_ce; fused.go the fused ops (fused.cu, the pair kernels of
//	                 qk_norm_rope.cu, softcap_ce_fused), over the row code the unfused
//	                 kernels share (kernels/golf_rows.cuh)
//	cost.go          the cost model: bytes and FLOPs of every kernel launch and matmul
//	                 from its arguments, tallied per kernel (StartCosts, Costs)
//	dry.go           the dry driver and cuBLASLt (OpenDry): a step taken, costed, not run
//	lt.go            the Lt interface (cuBLASLt) and the plan cache
//	libs.go          where each library is searched, and the one error that lists every path tried
//	kernels.go       the kernel registry, flavours, element types, programs and compile options
//	launch.go        the launch table (threads, dynamic shared memory, grid) and the fit rules
//	cubin.go         kernel resources from a cubin's ELF and ptxas's report
//	cache.go         the on-disk cubin cache
//	report.go        the registry/launch/fit report behind `golf kernels`
//	gemm_plan.go     the GEMMs of a training step and their cuBLASLt (column-major) form
//	cublaslt_enums.go  cuBLASLt enum values, with their sources
//	driver.go        the Driver interface and Context, a device's context on one locked OS thread
//
// and the tagged ones bind the libraries: dl_cuda.go (dlopen, symbols),
// nvrtc_cuda.go, compile_cuda.go, cublaslt_cuda.go, driver_cuda.go, and
// open_cuda.go (OpenDevice: driver, context, NVRTC compile through the
// cache, cuBLASLt, Open).
//
// Kernels are compiled by NVRTC for the device's architecture, one program
// per kernel file and element type, and cached on disk (Cache);
// `golf kernels --backend cuda` compiles them all for sm_80..sm_90 and
// prints each kernel's resource use beside its launch, which needs NVRTC
// only, no GPU. The tagged tests (GOLF_REQUIRE_CUDA_LIBS=1 go test -tags
// cuda ./cuda/...) do the same with the real NVRTC and cuBLASLt of CUDA
// 11.8 (scripts/ci/cuda_libs.sh installs them on Debian), and run the
// backend over the stand-in driver of package internal/kemu/cudacpp
// (package cuda/standin): every kernel on the CPU emulator against the
// conformance suite's float64 oracles, whole training steps, the host's
// waits and allocations per step. Package cuda/gputest holds the same
// checks for a real GPU (skipped without one; scripts/gpu_check.sh runs
// them on a GPU machine), and cuda/cudatest what both share. docs/cuda.md
// describes the backend for users.
package cuda
