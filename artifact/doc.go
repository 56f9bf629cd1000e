// Package artifact writes and reads the two artifacts of a run, as
// train_gpt_mlx.py does at the end of training: the raw model (.npz) and
// the int8 + zlib quantized model (.int8.ptz), plus the expected-values
// summary that scripts/check_artifacts.py checks both against.
//
// # Raw model: <run_id>_model.npz
//
// A zip archive of stored .npy (version 1.0) members, one per tensor, named
// "<name>.npy" with the reference's flat parameter names, in model order;
// numpy.load and mx.load read it. golf keeps fp32 master weights, so every
// float tensor of the raw model is '<f4' float32. Other dtypes are written
// as MLX writes them: float16 '<f2', int32 '<i4', and bfloat16 '<V2' (numpy
// has no bfloat16: it reads such a member as raw 2-byte voids, the top 16
// bits of a float32; mx.load reads it back as bfloat16).
//
// # Quantized model: <run_id>_model.int8.ptz
//
// The reference pickles its quantized state dict; golf stores the same
// dict in a form Python reads with zlib and numpy alone (no pickle):
//
//	file = zlib.compress(npz_bytes, level 9)
//	npz_bytes: a zip of stored .npy members, in this order:
//	  __meta__.npy                uint8 (n,): UTF-8 JSON, below
//	  for each tensor name, in model order, either
//	    quantized/<name>.npy      int8, the tensor's shape
//	    scales/<name>.npy         float16 (rows,) per-row, or float32 () per-tensor
//	  or
//	    passthrough/<name>.npy    float32 (control tensors), float16 (other small
//	                              float tensors) or the tensor as is (non-float)
//	__meta__ JSON:
//	  {"__quant_format__": "int8_clean_per_row_v1",
//	   "dtypes": {name: "float32" | "float16" | "bfloat16"},  // quantized tensors
//	   "qmeta": {name: {"scheme": "per_row", "axis": 0}},      // per-row tensors
//	   "passthrough_orig_dtypes": {name: "float32" | "bfloat16"},
//	   "order": [name, ...]}
//
// numpy.load keeps the '/' in member names as written ("quantized/<name>").
// The JSON always carries all five keys (the reference omits empty qmeta
// and passthrough_orig_dtypes). Dequantizing, as dequantize_state_dict_int8:
//
//	import io, json, zlib, numpy as np
//	z = np.load(io.BytesIO(zlib.decompress(open("model.int8.ptz", "rb").read())))
//	meta = json.loads(z["__meta__"].tobytes())
//	def tensor(n):
//	    if "passthrough/" + n in z.files:
//	        a = z["passthrough/" + n]; return a.astype(np.float32) if n in meta["passthrough_orig_dtypes"] else a
//	    q, s = z["quantized/" + n].astype(np.float32), z["scales/" + n].astype(np.float32)
//	    return q * (s.reshape((-1,) + (1,) * (q.ndim - 1)) if s.ndim else s)
//	state = {n: tensor(n) for n in meta["order"]}
//
// It returns float32 for quantized tensors and for bfloat16 originals;
// the reference then casts each to its recorded dtype (mx.array(w, dtype)),
// as Dequantize does. golf's float tensors are float32, so for golf's
// artifacts the two agree bit for bit.
//
// The scheme is the reference's (see Quantize): float tensors with more than
// 65,536 elements become int8 with a per-row float16 scale (2-D) or one
// float32 scale (other ranks), after clipping at the 99.99984th percentile
// of |x|; smaller float tensors are kept, as float32 when their name
// contains a control pattern (INT8_KEEP_FLOAT_FP32_NAME_PATTERNS) and as
// float16 otherwise; non-float tensors are kept unchanged. The quantile and
// all quantization arithmetic are float32, as numpy ≥ 2 computes them for
// float32 data (numpy 1.x interpolated the quantile in float64; the two can
// differ in the last bit of a clip value and so, rarely, in one int8 code).
// Go's zlib at level 9 is not byte-identical to Python's, so the file size
// can differ slightly from what the reference would write for the same
// tensors.
//
// # Summary
//
// WriteSummary records, per tensor of the raw model, its shape, dtype,
// CRC-32 of the stored bytes, sums and edge values, so that
//
//	python3 scripts/check_artifacts.py model.npz model.int8.ptz summary.json
//
// can check, with numpy and zlib alone, that both artifacts hold exactly
// the tensors golf trained (the quantized one to within its quantization
// step).
//
// # Reading untrusted artifacts
//
// The readers never allocate more than an artifact declares and a cap
// allows: DefaultMaxBytes, or what the caller passes with MaxBytes (golf
// eval passes the largest artifact the model's shape allows). A zip's
// declared member sizes are checked against the cap before any member is
// read, each .npy header must account for exactly its member's size, a
// bare .npy stream's buffer grows only as data arrives, and a container's
// zlib stream stops inflating at the cap. InspectNPZ and InspectQuantized
// read only the arrays' headers (the container as a stream, its payload
// discarded), so a model's shape can be read before its size is known to
// be sane. The fuzz targets (FuzzReadNPY, FuzzReadNPZArrays,
// FuzzDecodeQuantized, FuzzReadQuantized) hold these properties on
// arbitrary bytes: no panic, nothing accepted beyond the cap, accepted
// inputs round-trip.
//
// Writes are atomic: SaveNPZ, SaveQuantized and WriteSummary write a
// temporary file in the destination directory, sync it and rename it over
// the destination; on any error the temporary file is removed.
package artifact
