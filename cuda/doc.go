// Package cuda is golf's CUDA backend for NVIDIA GPUs, a peer of package
// metal: the same op names, kernels in CUDA C++ (cuda/kernels/*.cu, one
// file per op family, with the kernel names of shaders/*.metal), and the
// same conformance suite.
//
// Nothing here needs cgo or a CUDA toolkit to build: the driver API
// (libcuda.so.1), NVRTC and cuBLASLt are loaded at run time with
// github.com/ebitengine/purego, in files behind the build tag `cuda`
// (go build -tags cuda ./cmd/golf, CGO_ENABLED=0 is fine). The untagged
// files are pure Go that every build can test: the library search, the
// kernel registry and launch configurations, the cubin reader, the compile
// cache, the cuBLASLt enums and the GEMM plan of a training step.
//
// Kernels are compiled by NVRTC at start-up for the device's architecture
// and cached on disk (see Cache); `golf kernels --backend cuda` compiles
// them all for sm_80..sm_90 and prints each kernel's resource use, which
// needs NVRTC only, no GPU.
package cuda
