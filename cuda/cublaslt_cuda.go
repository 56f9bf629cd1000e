//go:build cuda

package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// MinCublasLt is the oldest cuBLASLt golf accepts (cublasLtGetVersion):
// 11.11, the one of CUDA 11.8.
const MinCublasLt = 11_11_00

// CublasLt is the cuBLASLt library, loaded with LoadCublasLt. Creating
// descriptors, layouts and preferences needs no device; cublasLtCreate,
// the heuristics and cublasLtMatmul do.
type CublasLt struct {
	Path    string
	Version int // cublasLtGetVersion: major·10000 + minor·100 + patch

	getVersion      func() uint64
	getStatusString func(status int32) *byte

	create  func(handle *uintptr) int32
	destroy func(handle uintptr) int32

	descCreate  func(desc *uintptr, computeType int32, scaleType int32) int32
	descDestroy func(desc uintptr) int32
	descSet     func(desc uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	descGet     func(desc uintptr, attr int32, buf unsafe.Pointer, size uint64, written *uint64) int32

	layoutCreate  func(layout *uintptr, typ int32, rows, cols uint64, ld int64) int32
	layoutDestroy func(layout uintptr) int32
	layoutSet     func(layout uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	layoutGet     func(layout uintptr, attr int32, buf unsafe.Pointer, size uint64, written *uint64) int32

	prefCreate  func(pref *uintptr) int32
	prefDestroy func(pref uintptr) int32
	prefSet     func(pref uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	prefGet     func(pref uintptr, attr int32, buf unsafe.Pointer, size uint64, written *uint64) int32

	heuristic func(handle, desc, a, b, c, d, pref uintptr, requested int32, results unsafe.Pointer, returned *int32) int32
	// matmul has cublasLtMatmul's 16 arguments (purego passes up to 32 on
	// amd64 and arm64): handle, desc, alpha, A, Adesc, B, Bdesc, beta, C,
	// Cdesc, D, Ddesc, algo, workspace, workspaceSize, stream.
	matmul func(handle, desc uintptr, alpha unsafe.Pointer, a, aDesc, b, bDesc uintptr, beta unsafe.Pointer,
		c, cDesc, d, dDesc uintptr, algo unsafe.Pointer, workspace uintptr, workspaceSize uint64, stream uintptr) int32
}

var loadCublasLt = sync.OnceValues(func() (*CublasLt, error) {
	l := &CublasLt{}
	_, path, err := openLibrary(LibCublasLt, DefaultSearchEnv(), purego.RTLD_NOW|purego.RTLD_LOCAL, l.check)
	if err != nil {
		return nil, err
	}
	l.Path = loadedPath(path)
	return l, nil
})

// LoadCublasLt finds, opens and checks cuBLASLt once per process.
func LoadCublasLt() (*CublasLt, error) { return loadCublasLt() }

func (l *CublasLt) check(h uintptr, path string) error {
	err := bindSymbols(h, []symbol{
		{"cublasLtGetVersion", &l.getVersion, false},
		{"cublasLtGetStatusString", &l.getStatusString, false},
		{"cublasLtCreate", &l.create, false},
		{"cublasLtDestroy", &l.destroy, false},
		{"cublasLtMatmulDescCreate", &l.descCreate, false},
		{"cublasLtMatmulDescDestroy", &l.descDestroy, false},
		{"cublasLtMatmulDescSetAttribute", &l.descSet, false},
		{"cublasLtMatmulDescGetAttribute", &l.descGet, false},
		{"cublasLtMatrixLayoutCreate", &l.layoutCreate, false},
		{"cublasLtMatrixLayoutDestroy", &l.layoutDestroy, false},
		{"cublasLtMatrixLayoutSetAttribute", &l.layoutSet, false},
		{"cublasLtMatrixLayoutGetAttribute", &l.layoutGet, false},
		{"cublasLtMatmulPreferenceCreate", &l.prefCreate, false},
		{"cublasLtMatmulPreferenceDestroy", &l.prefDestroy, false},
		{"cublasLtMatmulPreferenceSetAttribute", &l.prefSet, false},
		{"cublasLtMatmulPreferenceGetAttribute", &l.prefGet, false},
		{"cublasLtMatmulAlgoGetHeuristic", &l.heuristic, false},
		{"cublasLtMatmul", &l.matmul, false},
	})
	if err != nil {
		return err
	}
	l.Version = int(l.getVersion())
	if l.Version < MinCublasLt {
		return &TooOldError{Found: versionString(l.Version), Need: versionString(MinCublasLt)}
	}
	return nil
}

// versionString spells a cuBLAS version number (111103 → 11.11.3).
func versionString(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// status turns a cublasStatus_t into an error naming the call.
func (l *CublasLt) status(call string, s int32) error {
	if s == 0 {
		return nil
	}
	name, ok := cublasStatusNames[s]
	if !ok {
		name = fmt.Sprintf("cublasStatus_t %d", s)
	}
	return fmt.Errorf("cuda: %s: %s (%s)", call, name, goString(l.getStatusString(s)))
}

// NewHandle is cublasLtCreate.
func (l *CublasLt) NewHandle() (LtHandle, error) {
	var h uintptr
	if err := l.status("cublasLtCreate", l.create(&h)); err != nil {
		return 0, err
	}
	return LtHandle(h), nil
}

// DestroyHandle is cublasLtDestroy.
func (l *CublasLt) DestroyHandle(h LtHandle) error {
	return l.status("cublasLtDestroy", l.destroy(uintptr(h)))
}

// NewPlan creates the descriptor, layouts and preference of g with a
// workspace limit of workspace bytes (no device needed). On error nothing
// is left allocated.
func (l *CublasLt) NewPlan(g GEMM, workspace uint64) (p *LtPlan, err error) {
	p = &LtPlan{GEMM: g, Lt: g.Lt(), Workspace: workspace}
	defer func() {
		if err != nil {
			l.DestroyPlan(p)
			p = nil
		}
	}()
	lt := p.Lt
	if err = l.status("cublasLtMatmulDescCreate", l.descCreate(&p.desc, lt.ComputeType, lt.ScaleType)); err != nil {
		return
	}
	for _, a := range []struct {
		attr int32
		v    int32
	}{{ltDescTransA, lt.TransA}, {ltDescTransB, lt.TransB}} {
		v := a.v
		if err = l.SetDesc(p, a.attr, unsafe.Pointer(&v), 4); err != nil {
			return
		}
	}
	epi := uint32(ltEpilogueDefault)
	if err = l.SetDesc(p, ltDescEpilogue, unsafe.Pointer(&epi), 4); err != nil {
		return
	}
	for i, lay := range []LtLayout{lt.A, lt.B, lt.C, lt.D} {
		if err = l.status("cublasLtMatrixLayoutCreate", l.layoutCreate(&p.layouts[i], lay.Type, lay.Rows, lay.Cols, lay.LD)); err != nil {
			return
		}
	}
	if err = l.status("cublasLtMatmulPreferenceCreate", l.prefCreate(&p.pref)); err != nil {
		return
	}
	ws := workspace
	err = l.status("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
		l.prefSet(p.pref, ltPrefMaxWorkspaceBytes, unsafe.Pointer(&ws), 8))
	return
}

// DestroyPlan releases what NewPlan created (it may be partial).
func (l *CublasLt) DestroyPlan(p *LtPlan) {
	if p.pref != 0 {
		l.prefDestroy(p.pref)
		p.pref = 0
	}
	for i, h := range p.layouts {
		if h != 0 {
			l.layoutDestroy(h)
			p.layouts[i] = 0
		}
	}
	if p.desc != 0 {
		l.descDestroy(p.desc)
		p.desc = 0
	}
}

// SetDesc sets an attribute of p's operation descriptor from size bytes
// at buf.
func (l *CublasLt) SetDesc(p *LtPlan, attr int32, buf unsafe.Pointer, size uint64) error {
	return l.status(fmt.Sprintf("cublasLtMatmulDescSetAttribute(%d)", attr), l.descSet(p.desc, attr, buf, size))
}

// GetDesc reads an attribute of p's operation descriptor into buf (size
// bytes) and returns the bytes written; with size 0 it returns the size
// the attribute needs.
func (l *CublasLt) GetDesc(p *LtPlan, attr int32, buf unsafe.Pointer, size uint64) (uint64, error) {
	var written uint64
	err := l.status(fmt.Sprintf("cublasLtMatmulDescGetAttribute(%d)", attr), l.descGet(p.desc, attr, buf, size, &written))
	return written, err
}

// GetLayout reads an attribute of layout i (0..3: A, B, C, D) of p.
func (l *CublasLt) GetLayout(p *LtPlan, i int, attr int32, buf unsafe.Pointer, size uint64) (uint64, error) {
	var written uint64
	err := l.status(fmt.Sprintf("cublasLtMatrixLayoutGetAttribute(%d)", attr), l.layoutGet(p.layouts[i], attr, buf, size, &written))
	return written, err
}

// SetLayout sets an attribute of layout i of p.
func (l *CublasLt) SetLayout(p *LtPlan, i int, attr int32, buf unsafe.Pointer, size uint64) error {
	return l.status(fmt.Sprintf("cublasLtMatrixLayoutSetAttribute(%d)", attr), l.layoutSet(p.layouts[i], attr, buf, size))
}

// GetPref reads an attribute of p's preference.
func (l *CublasLt) GetPref(p *LtPlan, attr int32, buf unsafe.Pointer, size uint64) (uint64, error) {
	var written uint64
	err := l.status(fmt.Sprintf("cublasLtMatmulPreferenceGetAttribute(%d)", attr), l.prefGet(p.pref, attr, buf, size, &written))
	return written, err
}

// SelectAlgo asks the heuristics for p's best algorithm within its
// workspace (needs a handle, so a device) and keeps it in the plan.
func (l *CublasLt) SelectAlgo(h LtHandle, p *LtPlan) error {
	var results [ltHeuristicResultSize]byte
	var n int32
	err := l.status("cublasLtMatmulAlgoGetHeuristic", l.heuristic(uintptr(h), p.desc, p.layouts[0], p.layouts[1],
		p.layouts[2], p.layouts[3], p.pref, 1, unsafe.Pointer(&results[0]), &n))
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("cuda: cuBLASLt has no algorithm for %s (%s) within %d bytes of workspace", p.GEMM.Name, p.GEMM.Key(), p.Workspace)
	}
	p.algo, p.hasAlgo = results, true
	return nil
}

// Matmul enqueues p on stream: the backend's row-major
// D = alpha·op(a)·op(b) + beta·c (device pointers; c may equal d), with
// cuBLASLt's operands swapped as LtMatmul explains.
func (l *CublasLt) Matmul(h LtHandle, p *LtPlan, alpha, beta float32, a, b, c, d, workspace, stream uintptr) error {
	if !p.hasAlgo {
		return fmt.Errorf("cuda: cublasLtMatmul(%s): no algorithm selected (SelectAlgo)", p.GEMM.Name)
	}
	return l.status("cublasLtMatmul", l.matmul(uintptr(h), p.desc, unsafe.Pointer(&alpha),
		b, p.layouts[0], a, p.layouts[1], unsafe.Pointer(&beta), c, p.layouts[2], d, p.layouts[3],
		unsafe.Pointer(&p.algo[0]), workspace, p.Workspace, stream))
}

// ltAttr is one attribute a plan checks: its id, the C size golf passes,
// and the value the plan must hold.
type ltAttr struct {
	name string
	id   int32
	size uint64
	want uint64
}

// CheckPlan reads every attribute of p back from cuBLASLt and compares it
// with what golf meant: first the size cuBLASLt says the attribute has
// (a GetAttribute with no buffer), then the value. The values include the
// ones set through the Create calls' arguments (compute and scale type,
// each layout's type, rows, columns and leading dimension) and documented
// defaults (pointer mode host, column order, batch count 1, search mode
// best fit, 256-byte alignments), so an attribute id that names another
// attribute, or a wrong size, is caught. NewPlan's callers run it once per
// plan.
func (l *CublasLt) CheckPlan(p *LtPlan) error {
	lt := p.Lt
	desc := []ltAttr{
		{"COMPUTE_TYPE", ltDescComputeType, 4, uint64(lt.ComputeType)},
		{"SCALE_TYPE", ltDescScaleType, 4, uint64(lt.ScaleType)},
		{"POINTER_MODE", ltDescPointerMode, 4, 0},
		{"TRANSA", ltDescTransA, 4, uint64(lt.TransA)},
		{"TRANSB", ltDescTransB, 4, uint64(lt.TransB)},
		{"EPILOGUE", ltDescEpilogue, 4, ltEpilogueDefault},
	}
	for _, a := range desc {
		if err := l.checkAttr(p.GEMM.Name+" desc", a, func(buf unsafe.Pointer, size uint64) (uint64, error) {
			return l.GetDesc(p, a.id, buf, size)
		}); err != nil {
			return err
		}
	}
	for i, lay := range []LtLayout{lt.A, lt.B, lt.C, lt.D} {
		layout := []ltAttr{
			{"TYPE", ltLayoutType, 4, uint64(lay.Type)},
			{"ORDER", ltLayoutOrder, 4, ltOrderCol},
			{"ROWS", ltLayoutRows, 8, lay.Rows},
			{"COLS", ltLayoutCols, 8, lay.Cols},
			{"LD", ltLayoutLD, 8, uint64(lay.LD)},
			{"BATCH_COUNT", ltLayoutBatchCount, 4, 1},
		}
		for _, a := range layout {
			if err := l.checkAttr(fmt.Sprintf("%s layout %c", p.GEMM.Name, "ABCD"[i]), a, func(buf unsafe.Pointer, size uint64) (uint64, error) {
				return l.GetLayout(p, i, a.id, buf, size)
			}); err != nil {
				return err
			}
		}
	}
	pref := []ltAttr{
		{"SEARCH_MODE", ltPrefSearchMode, 4, 0},
		{"MAX_WORKSPACE_BYTES", ltPrefMaxWorkspaceBytes, 8, p.Workspace},
		{"MIN_ALIGNMENT_A_BYTES", ltPrefMinAlignmentA, 4, 256},
		{"MIN_ALIGNMENT_B_BYTES", ltPrefMinAlignmentB, 4, 256},
		{"MIN_ALIGNMENT_C_BYTES", ltPrefMinAlignmentC, 4, 256},
		{"MIN_ALIGNMENT_D_BYTES", ltPrefMinAlignmentD, 4, 256},
	}
	for _, a := range pref {
		if err := l.checkAttr(p.GEMM.Name+" preference", a, func(buf unsafe.Pointer, size uint64) (uint64, error) {
			return l.GetPref(p, a.id, buf, size)
		}); err != nil {
			return err
		}
	}
	return nil
}

var _ Lt = (*CublasLt)(nil)

// checkAttr checks one attribute's size and value through get.
func (l *CublasLt) checkAttr(what string, a ltAttr, get func(buf unsafe.Pointer, size uint64) (uint64, error)) error {
	need, err := get(nil, 0)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, a.name, err)
	}
	if need != a.size {
		return fmt.Errorf("cuda: %s %s (attribute %d): cuBLASLt stores %d bytes, golf passes %d", what, a.name, a.id, need, a.size)
	}
	var v uint64 // little-endian: a 4-byte attribute fills the low half
	written, err := get(unsafe.Pointer(&v), a.size)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, a.name, err)
	}
	if written != a.size || v != a.want {
		return fmt.Errorf("cuda: %s %s (attribute %d): read %d (%d bytes), want %d", what, a.name, a.id, v, written, a.want)
	}
	return nil
}
