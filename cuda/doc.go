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
// nvrtc_cuda.go, compile_cuda.go, cublaslt_cuda.go, driver_cuda.go.
//
// Kernels are compiled by NVRTC for the device's architecture, one program
// per kernel file and element type, and cached on disk (Cache);
// `golf kernels --backend cuda` compiles them all for sm_80..sm_90 and
// prints each kernel's resource use beside its launch, which needs NVRTC
// only, no GPU. The tagged tests (GOLF_REQUIRE_CUDA_LIBS=1 go test -tags
// cuda ./cuda/...) do the same with the real NVRTC and cuBLASLt of CUDA
// 11.8 (scripts/ci/cuda_libs.sh installs them on Debian).
//
// Not written yet: the backend itself (the ops over a Context, the memory
// plan, cuBLASLt plans in use), running the kernels on the CPU emulator,
// and a stand-in driver for the host code's tests.
package cuda
