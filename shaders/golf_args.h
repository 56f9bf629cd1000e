// golf_args.h: the argument structs of the Metal kernels, shared by the
// shaders, the Go host (package shaders mirrors every struct field by field,
// and shaders.Mirrors lists the mirrors; internal/kemu/msl's tests check sizes and
// offsets against g++, the strict front end against clang for arm64) and
// the emulator. Fields are 32-bit scalars only (uint, int, float), so MSL,
// C++ and Go lay them out the same way: no vectors, bools or pointers. A
// kernel's struct-typed buffer argument must be one of these (the strict
// front end's arg-struct rule).
//
// It also holds instantiate_kernel, the one way a kernel enters the library.
//
// A kernel laid out for a fixed number of threads per threadgroup says so
// with [[max_total_threads_per_threadgroup(N)]] after [[kernel]]: in this
// library the attribute means exactly N, which the emulator enforces at
// every dispatch.
#ifndef GOLF_ARGS_H
#define GOLF_ARGS_H

// instantiate_kernel(host, func, targs...) instantiates the kernel template
// func<targs...> under the library name host. Each shader file defines one
// instantiation macro over (dtype name, type) that expands to these. Outside
// the Metal compiler (the emulator compiles the shaders as C++, where an
// explicit instantiation takes no attributes) it is a plain instantiation:
// the emulator's generator reads the host names from the calls. The strict
// front end (internal/kemu/msl/strict) defines __GOLF_STRICT__: clang, unlike
// Apple's compiler, takes no attributes on an explicit instantiation.
#if defined(__METAL_VERSION__) && !defined(__GOLF_STRICT__)
#define instantiate_kernel(host, func, ...) \
  template [[host_name(host)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#else
#define instantiate_kernel(host, func, ...) \
  template decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#endif

// EltwiseArgs: an elementwise kernel over n elements.
struct EltwiseArgs {
  uint n;
};

// RMSNormArgs: rows × cols, normalised along cols.
struct RMSNormArgs {
  uint rows;
  uint cols;
  float eps;
};

// ScalarArgs: Scale (x *= alpha) and Axpy (dst += alpha·x) over n elements.
struct ScalarArgs {
  uint n;
  float alpha;
};

// ReduceArgs: Reduce of n elements into dst[0]; kind as backend.ReduceKind (0 sum, 1 sum of squares, 2 non-finite count).
struct ReduceArgs {
  uint n;
  uint kind;
};

// RMSNormBwdArgs: RMSNorm backward: rows × cols; has_res = 1 adds dres.
struct RMSNormBwdArgs {
  uint rows;
  uint cols;
  uint has_res;
};

// ResidMixArgs: resid-mix: rows × cols.
struct ResidMixArgs {
  uint rows;
  uint cols;
};

// ScaledAddArgs: scaled add: rows × cols; has_s = 0 means s = 1; has_dy/has_ds select the backward outputs.
struct ScaledAddArgs {
  uint rows;
  uint cols;
  uint has_s;
  uint has_dy;
  uint has_ds;
};

// AddNormArgs: scaled add + RMSNorm of the sum: rows × cols, epsilon eps; has_s = 0 means s = 1.
struct AddNormArgs {
  uint rows;
  uint cols;
  float eps;
  uint has_s;
};

// EmbeddingArgs: embedding: rows tokens of width cols from a vocab × cols table.
struct EmbeddingArgs {
  uint rows;
  uint cols;
  uint vocab;
};

// GemmArgs: C = alpha·op(A)·op(B) + beta·C, row-major, op(A) m×k, op(B) k×n, row strides lda/ldb/ldc in elements; batch products (0 is 1) along the grid's z, matrix z at z·stride_a, z·stride_b, z·stride_c (c and d) elements.
struct GemmArgs {
  uint m;
  uint n;
  uint k;
  uint lda;
  uint ldb;
  uint ldc;
  uint trans_a;
  uint trans_b;
  float alpha;
  float beta;
  uint batch;
  uint stride_a;
  uint stride_b;
  uint stride_c;
  uint aligned;  // bit 0: a, bit 1: b starts and has rows 16-byte aligned (the simd flavour's vector loads); bit 2: d's start, ldc and stride_c are even (its paired stores); bit 3 (gemm_reduce): n, ldc and the offsets of the partials, c and d are multiples of 4 (its vector chunks)
  uint slice_k;  // split-K: k per slice (a multiple of 16), slice tg.z writes its float partial at tg.z·stride_c; 0: none
};

// RopeArgs: q/k RMSNorm + RoPE + gain: rows tokens × heads × head_dim; position = row mod seq_len.
struct RopeArgs {
  uint rows;
  uint heads;
  uint head_dim;
  uint seq_len;
  float base;
  float eps;
  uint has_gain;
};

// RopePairArgs: RopeArgs for q (q_heads) and k (k_heads) of the same rows × head_dim in one launch; has_*_gain as RopeArgs.has_gain; has_*_dgain select the dgain sums.
struct RopePairArgs {
  uint rows;
  uint q_heads;
  uint k_heads;
  uint head_dim;
  uint seq_len;
  float eps;
  uint q_has_gain;
  uint k_has_gain;
  uint q_has_dgain;
  uint k_has_dgain;
};

// AttentionArgs: causal GQA attention: batch sequences of seq_len rows, heads query heads over kv_heads key/value heads of head_dim.
struct AttentionArgs {
  uint batch;
  uint seq_len;
  uint heads;
  uint kv_heads;
  uint head_dim;
  float scale;
  uint own_delta;  // attention_dkv_ds_simd: 1 = δ of each query tile computed in the kernel from out (buffer 10), delta unread
};

// CEArgs: softcapped cross-entropy: rows × vocab logits, softcap cap, gradient scale.
struct CEArgs {
  uint rows;
  uint vocab;
  float cap;
  float scale;
};

// AdamArgs: Adam over n elements; bias1 = 1−β1^t and bias2 = 1−β2^t computed on the host.
struct AdamArgs {
  uint n;
  float lr;
  float beta1;
  float beta2;
  float eps;
  float bias1;
  float bias2;
};

// MomentumArgs: Muon momentum over n elements.
struct MomentumArgs {
  uint n;
  float momentum;
};

// MuonSumsqArgs: Muon momentum over the n elements of matrix z of a Newton–Schulz batch, with the sums of squares of its parts threadgroups.
struct MuonSumsqArgs {
  uint n;
  float momentum;
  uint z;
  uint parts;
};

// MuonAxpyArgs: w (rows × cols) += alpha·Xᵀ, X matrix z of a transposed Newton–Schulz batch (cols × rows each).
struct MuonAxpyArgs {
  uint rows;
  uint cols;
  uint z;
  float alpha;
};

// NSArgs: Newton–Schulz element-wise steps over count matrices (the grid's z) of rows × cols, one after another (a, b, c the quintic's coefficients; parts the partial sums of ‖g‖² per matrix).
struct NSArgs {
  uint rows;
  uint cols;
  float a;
  float b;
  float c;
  uint count;
  uint parts;
};

#endif  // GOLF_ARGS_H
