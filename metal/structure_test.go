package metal

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
)

// structureRows is the report of the real shaders, built once per test
// binary (about half a minute on two cores).
var structureRows = sync.OnceValues(func() ([]StructureRow, error) {
	clang, err := strict.FindClang()
	if err != nil {
		return nil, err
	}
	return StructureReport(clang)
})

func structureOrSkip(t *testing.T) map[string]StructureRow {
	t.Helper()
	clangOrSkip(t)
	rows, err := structureRows()
	require.NoError(t, err)
	by := map[string]StructureRow{}
	for _, r := range rows {
		by[r.Host] = r
	}
	return by
}

// TestStructureReportCoversRegistry: one row per registry kernel, flavour
// and element type, and the table prints every one.
func TestStructureReportCoversRegistry(t *testing.T) {
	by := structureOrSkip(t)
	rows, _ := structureRows()
	assert.Len(t, rows, len(HostNames()))
	for _, h := range HostNames() {
		assert.Contains(t, by, h)
	}
	var b bytes.Buffer
	require.NoError(t, WriteStructure(&b, rows))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, len(rows)+1)
	assert.Equal(t, []string{"KERNEL", "FLAVOUR", "ELEM", "THREADS", "TG", "BYTES", "LOAD", "B", "STORE", "B",
		"MMA/ITER", "BARRIERS/ITER", "TILES", "MAIN", "LOOP"}, strings.Fields(lines[0]))
	t.Log("\n" + b.String())
}

// TestStructureSimdVectorLoads fails if a simd GEMM or attention kernel's
// widest device load is 2 bytes (it went back to scalar 16-bit loads), or
// if a 16-bit instantiation stages its operand tiles in float threadgroup
// memory.
func TestStructureSimdVectorLoads(t *testing.T) {
	by := structureOrSkip(t)
	// The staged operand tiles of each kernel (the float arrays beside
	// them are score blocks and epilogue blocks, float by design).
	staged := map[string][]string{"gemm": {"atile", "btile"}, "gemm_f32": {"atile", "btile"},
		"attention/fwd": {"kvt"}, "attention/dq": {"kvt"}, "attention/dkv": {"qdt"},
		"attention/dkv_ds": {"qdt"}, "attention/dq_ds": {"kt"}}
	n := 0
	for _, k := range Kernels {
		if k.Op != "gemm" && k.Op != "gemm_f32" && k.Op != "attention" {
			continue
		}
		for _, e := range ElemTypes {
			r := by[KernelName(k.Op, k.Dir, Simd, e)]
			n++
			assert.NotEqual(t, 2, r.MaxLoad, "%s: its widest device load is 2 bytes (scalar 16-bit loads)", r.Host)
			assert.Positive(t, r.MaxLoad, "%s: no device load found", r.Host)
			names := staged[k.Op]
			if k.Op == "attention" {
				names = staged[k.Op+"/"+k.Dir]
			}
			if k.Dir == "reduce" {
				// Split-K's sum of slices reads each slice's four
				// outputs as one float4.
				assert.Equal(t, 16, r.MaxLoad, "%s: widest device load", r.Host)
				continue
			}
			if e == "float" {
				continue
			}
			arrays := map[string]string{}
			for _, a := range r.Arrays {
				arrays[a.Name] = a.Elem
			}
			for _, name := range names {
				if assert.Contains(t, arrays, name, "%s: staged tile %s", r.Host, name) {
					assert.Equal(t, e, arrays[name], "%s: %s is staged in %s threadgroup memory, want %s", r.Host, name, arrays[name], e)
				}
			}
		}
	}
	// gemm_{nn,nt,tn,tt}, gemm_f32_{nn,nt,tn,tt}, gemm_{nn,nt}_sym,
	// gemm_nt_relu_sq, gemm_nn_drelu_sq, gemm_nt_scaled_add (13) and the 8
	// attention kernels, in 3 types.
	assert.Equal(t, 3*(13+8), n, "simd GEMM and attention instantiations checked")
}

// TestStructureFacts: figures read off the shaders by hand.
func TestStructureFacts(t *testing.T) {
	by := structureOrSkip(t)

	// attention_dq_simd<half> (attention.metal) declares one threadgroup
	// array (the scores stay in registers):
	//   threadgroup T kvt[attention_bwd_tiles<T>()]: max(2·bwd_bk<half,64>·(64+vw), 2·bwd_bk<half,128>·(128+vw))
	//     with vw = 16/sizeof(half) = 8, bwd_bk = 16 at 64·2 = 128 ≤ 128 bytes, 8 at 128·2 = 256:
	//     max(2·16·72, 2·8·136) = max(2304, 2176) = 2304 halves = 4608 bytes.
	dq := by["attention_dq_simd_half"]
	assert.Equal(t, 2*16*(64+8)*2, dq.Threadgroup, "attention_dq_simd_half")
	assert.Equal(t, 4608, dq.Threadgroup)
	// attention_dkv_simd<bfloat>: qdt as kvt above (4608 bytes) and
	// lse_tile, delta_tile: float[attention_sg_rows = 16] each (2·64), all
	// doubled (attention_nbuf<bfloat> = 2: double-buffered); in float,
	// once: max(2·8·(64+4), 2·8·(128+4))·4 = 8448 bytes and 2·64.
	assert.Equal(t, 2*(4608+2*16*4), by["attention_dkv_simd_bfloat"].Threadgroup, "attention_dkv_simd_bfloat")
	assert.Equal(t, 2*(4608+2*16*4), by["attention_dkv_ds_simd_bfloat"].Threadgroup, "attention_dkv_ds_simd_bfloat")
	assert.Equal(t, 8448+2*16*4, by["attention_dkv_simd_float"].Threadgroup, "attention_dkv_simd_float")
	// attention_dq_ds_simd<bfloat>: kt, two buffers of one K tile of
	// fwd_bk<64> = 32 rows of 64 + 8 bfloats: 2·32·72·2 = 9216 bytes.
	assert.Equal(t, 2*32*72*2, by["attention_dq_ds_simd_bfloat"].Threadgroup, "attention_dq_ds_simd_bfloat")

	// gemm_simd (linear.metal): atile, btile T[2][GEMM_STAGE = 1536] (double
	// buffered), no other threadgroup array (the epilogue works from the
	// registers); 128 threads (GEMM_SIMD_THREADS, gemmThreadsSimd); the
	// k-loop (its third loop, after the two accumulator-zeroing loops)
	// loads both operands with gemm_stage_vec (one 16-byte uint4 read per
	// 8 bfloats), syncs once and runs gemm_step: kk < GEMM_BK = 16 by 8
	// (2 steps) × 4 × 4 fragments = 32 MMAs, at two call sites (the fast
	// step and the edge step; a pass runs one, the report counts sites):
	// 64. The epilogue stores each lane's pair as one vec<bfloat, 2>.
	g := by["gemm_nt_simd_bfloat"]
	assert.Equal(t, 2*2*1536*2, g.Threadgroup)
	assert.Equal(t, 128, g.Threads)
	assert.Equal(t, 16, g.MaxLoad)
	assert.Equal(t, 4, g.MaxStore, "the epilogue stores bfloat pairs")
	// The body is gemm_simd_body<TA, TB, SYM, EPI> (bools as 0 / true),
	// shared by the fused epilogues' kernels.
	assert.Equal(t, "gemm_simd_body<0,true,0,0> loop 3", g.Loop)
	assert.Equal(t, 2*(2*4*4), g.MMAs)
	assert.Equal(t, 1, g.Barriers)
	assert.True(t, g.ConstTiles)
	// The fused forward (gemm_nt_relu_sq) is the same product with the
	// relu² epilogue: the same tiles, loop and MMAs, and h and relu(h)²
	// stored as bfloat pairs.
	fr := by["gemm_nt_relu_sq_simd_bfloat"]
	assert.Equal(t, g.Threadgroup, fr.Threadgroup)
	assert.Equal(t, 128, fr.Threads)
	assert.Equal(t, "gemm_simd_body<0,true,0,1> loop 3", fr.Loop)
	assert.Equal(t, g.MMAs, fr.MMAs)
	assert.Equal(t, 4, fr.MaxStore)
	assert.Equal(t, "gemm_simd_body<0,0,0,2> loop 3", by["gemm_nn_drelu_sq_simd_bfloat"].Loop)
	// The residual epilogue (gemm_nt_scaled_add): the same product, y and
	// res + s⊙y stored as bfloat pairs.
	sa := by["gemm_nt_scaled_add_simd_bfloat"]
	assert.Equal(t, g.Threadgroup, sa.Threadgroup)
	assert.Equal(t, "gemm_simd_body<0,true,0,3> loop 3", sa.Loop)
	assert.Equal(t, g.MMAs, sa.MMAs)
	assert.Equal(t, 4, sa.MaxStore)
	// gemm_f32 writes float partials: float pairs, 8 bytes.
	assert.Equal(t, 8, by["gemm_f32_nn_simd_half"].MaxStore)

	// The portable GEMM: 256 threads, float tiles of GEMM_BK·GEMM_LD = 16·68
	// floats each, element-wise loads, no MMA, the inner k loop bounded by
	// the run-time kn.
	p := by["gemm_nn_portable_half"]
	assert.Equal(t, 256, p.Threads)
	assert.Equal(t, 2*16*68*4, p.Threadgroup)
	assert.Equal(t, 2, p.MaxLoad)
	assert.Zero(t, p.MMAs)
	assert.False(t, p.ConstTiles)

	// attention_fwd_simd<HD = 64>'s key loop: S = Q·Kᵀ over ND = 8 head
	// blocks × NC = 32/8 = 4 key blocks × 2 row blocks, O += P·V as many:
	// 2·(8·4·2) = 128 MMAs, and one barrier (double-buffered in bfloat;
	// two in float, staged one tile at a time).
	f := by["attention_fwd_simd_bfloat"]
	assert.Equal(t, 128, f.Threads)
	assert.Equal(t, 2*8*4*2, f.MMAs)
	assert.Equal(t, 1, f.Barriers)
	assert.Equal(t, 2, by["attention_fwd_simd_float"].Barriers)
	assert.Equal(t, 1, by["attention_dkv_ds_simd_bfloat"].Barriers)
	assert.Equal(t, 1, by["attention_dq_ds_simd_bfloat"].Barriers)
	assert.Equal(t, 16, f.MaxLoad)
	assert.True(t, f.ConstTiles)

	// A kernel whose op sizes its threadgroups at dispatch time.
	assert.Zero(t, by["zero_simd_float"].Threads)
}
