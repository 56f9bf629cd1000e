package cuda

// The cuBLASLt, cuBLAS and CUDA library-type enum values golf passes to
// libcublasLt. They are the same in CUDA 11.8, 12 and 13: checked against
// the cublasLt.h of CUDA 11 (as vendored in ggerganov/llama.cpp,
// include/cuda/cublasLt.h), a CUDA 12.8+/13 header (its cudaDataType_t has
// CUDA_R_4F_E2M1 and cublasComputeType_t CUBLAS_COMPUTE_32F_EMULATED_16BFX9)
// and Modular's CUDA 13 bindings (rcghpge/modular,
// max/kernels/src/_cublas/cublaslt.mojo); the numbering of every value below
// is unchanged across them (CUDA 12 removed some preference attributes —
// MATH_MODE_MASK 2, GAUSSIAN_MODE_MASK 4, POINTER_MODE_MASK 10,
// EPILOGUE_MASK 11, SM_COUNT_TARGET 13 — without renumbering the rest; golf
// uses none of the removed ones). The tagged tests create descriptors with
// the real library and read every attribute back, and check the values a
// descriptor starts with, so a wrong number or size fails there.

// cudaDataType_t (library_types.h).
const (
	cudaR32F  = 0  // CUDA_R_32F
	cudaR16F  = 2  // CUDA_R_16F
	cudaR16BF = 14 // CUDA_R_16BF
)

// cublasComputeType_t (cublas_api.h).
const (
	cublasCompute32F         = 68 // CUBLAS_COMPUTE_32F: fp32 accumulation, no TF32
	cublasCompute32FFastTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32: only when TF32 is asked for
)

// cublasOperation_t.
const (
	cublasOpN = 0
	cublasOpT = 1
)

// cublasStatus_t.
var cublasStatusNames = map[int32]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasLtMatmulDescAttributes_t, with the C type of each (its size is
// what Set/GetAttribute check).
const (
	ltDescComputeType = 0 // int32_t (cublasComputeType_t)
	ltDescScaleType   = 1 // int32_t (cudaDataType_t)
	ltDescPointerMode = 2 // int32_t, default CUBLASLT_POINTER_MODE_HOST = 0
	ltDescTransA      = 3 // int32_t (cublasOperation_t), default N
	ltDescTransB      = 4 // int32_t, default N
	ltDescEpilogue    = 7 // uint32_t (cublasLtEpilogue_t), default DEFAULT
)

// cublasLtEpilogue_t.
const ltEpilogueDefault = 1

// cublasLtMatrixLayoutAttribute_t.
const (
	ltLayoutType       = 0 // uint32_t (cudaDataType_t)
	ltLayoutOrder      = 1 // int32_t (cublasLtOrder_t), default COL
	ltLayoutRows       = 2 // uint64_t
	ltLayoutCols       = 3 // uint64_t
	ltLayoutLD         = 4 // int64_t
	ltLayoutBatchCount = 5 // int32_t, default 1
)

// cublasLtOrder_t.
const (
	ltOrderCol = 0
	ltOrderRow = 1
)

// cublasLtMatmulPreferenceAttributes_t.
const (
	ltPrefSearchMode        = 0 // uint32_t, default CUBLASLT_SEARCH_BEST_FIT = 0
	ltPrefMaxWorkspaceBytes = 1 // uint64_t, default 0
	ltPrefMinAlignmentA     = 5 // uint32_t, default 256
	ltPrefMinAlignmentB     = 6
	ltPrefMinAlignmentC     = 7
	ltPrefMinAlignmentD     = 8
)

// ltHeuristicResultSize is sizeof(cublasLtMatmulHeuristicResult_t): the
// 64-byte cublasLtMatmulAlgo_t, size_t workspaceSize, cublasStatus_t
// state, float wavesCount, int reserved[4].
const ltHeuristicResultSize = 64 + 8 + 4 + 4 + 16
