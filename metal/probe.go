package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Device probes: what the kernels' flavours need, learnt by running it.
//
// A device reports its GPU family (supportsFamily), and the family implies
// the capabilities: Apple7 simdgroup reductions and matrices, Apple6 or
// Metal3 bfloat. Some devices under-report: the "Apple Paravirtual device"
// of hosted macOS runners answers Apple5, though it is backed by Apple
// silicon and runs simdgroup matrices. So at start-up the runtime builds
// and runs one tiny kernel per capability (shaders/probe) and compares its
// output with the answer known here, bit for bit. Per capability:
//
//   - a probe that ran and gave the known answer: the device has it;
//   - a probe that ran and gave another answer, or whose dispatch failed:
//     the device does not have it, whatever its family says;
//   - a probe that did not build (the compiler or the pipeline refused
//     it): the family's answer stands. A device that refuses a feature it
//     reports would refuse the library's kernels too, and Open says which;
//     a device that does not report it is not given it.
//
// The simd flavour needs simdgroup reductions and shuffles and float
// simdgroup matrices (its GEMM and attention run on float tiles); bf16
// needs bfloat conversion and arithmetic. Half and bfloat matrices are
// probed and reported, not used.

// ProbeOutcome is what became of one probe.
type ProbeOutcome int

const (
	// ProbePassed: built, ran, and gave the known answer.
	ProbePassed ProbeOutcome = iota
	// ProbeWrong: built and ran, and gave another answer.
	ProbeWrong
	// ProbeFailed: built, but its dispatch or its command buffer failed.
	ProbeFailed
	// ProbeUnbuilt: its source or its pipeline did not build.
	ProbeUnbuilt
)

func (o ProbeOutcome) String() string {
	switch o {
	case ProbePassed:
		return "passed"
	case ProbeWrong:
		return "wrong answer"
	case ProbeFailed:
		return "failed to run"
	}
	return "did not build"
}

// ProbeResult is one probe's outcome.
type ProbeResult struct {
	Kernel  string // the probe's host name
	What    string // the capability, in words
	Outcome ProbeOutcome
	Detail  string // the first wrong value, or the error
}

// probe is one probe kernel: it runs as one threadgroup of threads threads
// over buffers bound in order, initialised by bufs, and check compares the
// buffers after the run with the known answer.
type probe struct {
	kernel  string
	file    string // its source, a name of shaders.ProbeFiles
	what    string
	threads int
	bufs    func() [][]byte
	check   func(bufs [][]byte) error
}

// poison is the initial contents of a probe's output buffer (every byte
// 0xff: a float NaN, a ushort no answer here equals), so a kernel that
// writes nothing fails.
func poison(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

func f32s(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func u16s(xs []uint16) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// probeSimd checks shaders/probe/probe_simd.metal: lane l holds l + 1.
var probeSimd = probe{
	kernel: "probe_simd", file: "probe/probe_simd.metal", what: "simdgroup reductions and shuffles", threads: 32,
	bufs: func() [][]byte { return [][]byte{poison(8 * 32 * 4)} },
	check: func(bufs [][]byte) error {
		names := [8]string{"simd_sum", "simd_max", "simd_min", "simd_prefix_exclusive_sum", "simd_shuffle_xor",
			"simd_shuffle_down", "simd_broadcast", "threads_per_simdgroup"}
		for f, name := range names {
			for l := 0; l < 32; l++ {
				var want float32
				switch f {
				case 0:
					want = 528
				case 1:
					want = 32
				case 2:
					want = 1
				case 3:
					want = float32(l * (l + 1) / 2)
				case 4:
					want = float32(l^1) + 1
				case 5:
					if l == 31 {
						continue // the lane past the end: undefined
					}
					want = float32(l) + 2
				case 6:
					want = 6
				case 7:
					want = 32
				}
				got := math.Float32frombits(binary.LittleEndian.Uint32(bufs[0][4*(f*32+l):]))
				if got != want {
					return fmt.Errorf("%s on lane %d gave %v, want %v", name, l, got, want)
				}
			}
		}
		return nil
	},
}

// matrixOperands are probe_matrix's a, b and c (row-major 8×8): small
// integers, so a·b + c is exact in float, half and bfloat.
func matrixOperands() (a, b, c [64]float32) {
	for r := 0; r < 8; r++ {
		for k := 0; k < 8; k++ {
			a[8*r+k] = float32((r+2*k)%5 - 2)
			b[8*r+k] = float32((3*r+k)%7 - 3)
			c[8*r+k] = float32(r - k)
		}
	}
	return a, b, c
}

// probeMatrix checks probe_matrix_<elem>: d = a·b + c.
func probeMatrix(elem string) probe {
	enc := func(xs [64]float32) []byte {
		switch elem {
		case "half":
			h := make([]uint16, 64)
			for i, x := range xs {
				h[i] = backend.F16Bits(x)
			}
			return u16s(h)
		case "bfloat":
			h := make([]uint16, 64)
			for i, x := range xs {
				h[i] = backend.BF16Bits(x)
			}
			return u16s(h)
		}
		return f32s(xs[:])
	}
	return probe{
		kernel: "probe_matrix_" + elem, file: "probe/probe_matrix.metal", what: elem + " simdgroup matrices", threads: 32,
		bufs: func() [][]byte {
			a, b, c := matrixOperands()
			return [][]byte{enc(a), enc(b), enc(c), poison(len(enc(c)))}
		},
		check: func(bufs [][]byte) error {
			a, b, c := matrixOperands()
			var d [64]float32
			for i := 0; i < 8; i++ {
				for j := 0; j < 8; j++ {
					s := c[8*i+j]
					for k := 0; k < 8; k++ {
						s += a[8*i+k] * b[8*k+j]
					}
					d[8*i+j] = s
				}
			}
			want := enc(d)
			es := len(want) / 64
			for i := 0; i < 64; i++ {
				if string(bufs[3][es*i:es*(i+1)]) != string(want[es*i:es*(i+1)]) {
					return fmt.Errorf("element (%d, %d) of a·b + c is %x, want %x (%v)", i/8, i%8,
						bufs[3][es*i:es*(i+1)], want[es*i:es*(i+1)], d[i])
				}
			}
			return nil
		},
	}
}

// bfloatProbeInputs are probe_bfloat's x, as float bits: exact values,
// ties in both directions, values just off a tie, a negative zero, the
// largest float (rounds to infinity) and infinity; then normal values with
// varied low bits. No subnormals: a GPU may flush them.
var bfloatProbeInputs = func() []uint32 {
	x := []uint32{
		0x3f800000, // 1
		0x3f808000, // 1 + 2⁻⁸: a tie, to even (down)
		0x3f818000, // 1 + 3·2⁻⁸: a tie, to even (up)
		0x3f808001, // just above a tie: up
		0x3f807fff, // just below a tie: down
		0xc0200000, // -2.5
		0x80000000, // -0
		0x7f7fffff, // the largest float: rounds to +Inf
		0x7f800000, // +Inf
		0x42f6e979, // 123.456
	}
	for i := uint32(len(x)); i < 32; i++ {
		x = append(x, 0x3e000000+i*0x00123457)
	}
	return x
}()

// probeBFloat checks probe_bfloat: bfloat(x) rounds to nearest, ties to
// even, widens exactly, and squares with one rounding (the product of two
// bfloats is exact in float, so its rounding is the known answer).
var probeBFloat = probe{
	kernel: "probe_bfloat", file: "probe/probe_bfloat.metal", what: "bfloat conversion and arithmetic", threads: 32,
	bufs: func() [][]byte {
		x := make([]float32, 32)
		for i, u := range bfloatProbeInputs {
			x[i] = math.Float32frombits(u)
		}
		return [][]byte{f32s(x), poison(64), poison(128), poison(64)}
	},
	check: func(bufs [][]byte) error {
		for i, u := range bfloatProbeInputs {
			x := math.Float32frombits(u)
			bits := backend.BF16Bits(x)
			w := math.Float32frombits(uint32(bits) << 16)
			sq := backend.BF16Bits(w * w)
			if got := binary.LittleEndian.Uint16(bufs[1][2*i:]); got != bits {
				return fmt.Errorf("bfloat(%v) has bits %#04x, want %#04x", x, got, bits)
			}
			if got := binary.LittleEndian.Uint32(bufs[2][4*i:]); got != math.Float32bits(w) {
				return fmt.Errorf("float(bfloat(%v)) is %v, want %v", x, math.Float32frombits(got), w)
			}
			if got := binary.LittleEndian.Uint16(bufs[3][2*i:]); got != sq {
				return fmt.Errorf("bfloat(%v)² has bits %#04x, want %#04x", w, got, sq)
			}
		}
		return nil
	},
}

// probes are every probe, in the order they run.
var probes = []probe{probeSimd, probeMatrix("float"), probeMatrix("half"), probeMatrix("bfloat"), probeBFloat}

// probeInstance matches a line instantiate_kernel("<host>", ...) of a probe
// file; group 1 is the host name.
var probeInstance = regexp.MustCompile(`(?m)^instantiate_kernel\("([a-z0-9_]+)",.*$`)

// probeSource is the source a device compiles for probe p: its file with
// the instantiations of the other probes of the file removed, so that a
// type the device cannot compile (bfloat matrices, say) fails only its own
// probe.
func probeSource(p probe) (string, error) {
	src, err := shaders.Probe(p.file)
	if err != nil {
		return "", err
	}
	found, instanced := false, false
	src = probeInstance.ReplaceAllStringFunc(src, func(line string) string {
		instanced = true
		if probeInstance.FindStringSubmatch(line)[1] == p.kernel {
			found = true
			return line
		}
		return ""
	})
	if instanced && !found {
		return "", fmt.Errorf("metal: %s does not instantiate probe %s", p.file, p.kernel)
	}
	return src, nil
}

// runProbes builds (through build) and runs every probe on rt, one command
// buffer each, and returns their outcomes in the order of probes. A
// runtime that a failed command buffer ended fails the probes after it.
func runProbes(rt Runtime, build func(p probe) (Pipeline, error)) []ProbeResult {
	out := make([]ProbeResult, 0, len(probes))
	for _, p := range probes {
		o, detail := runProbe(rt, p, build)
		out = append(out, ProbeResult{Kernel: p.kernel, What: p.what, Outcome: o, Detail: detail})
	}
	return out
}

func runProbe(rt Runtime, p probe, build func(p probe) (Pipeline, error)) (ProbeOutcome, string) {
	pl, err := build(p)
	if err != nil {
		return ProbeUnbuilt, err.Error()
	}
	if pl.MaxThreads() < p.threads {
		return ProbeFailed, fmt.Sprintf("its pipeline runs at most %d threads per threadgroup, the probe %d", pl.MaxThreads(), p.threads)
	}
	init := p.bufs()
	bufs := make([]Buffer, 0, len(init))
	defer func() {
		for _, b := range bufs {
			rt.Free(b)
		}
	}()
	args := make([]Arg, len(init))
	for i, b := range init {
		buf, err := rt.NewBuffer(len(b))
		if err != nil {
			return ProbeFailed, err.Error()
		}
		bufs = append(bufs, buf)
		copy(buf.Bytes(), b)
		args[i] = Arg{Buf: buf}
	}
	if err := rt.Dispatch(pl, [3]int{1, 1, 1}, [3]int{p.threads, 1, 1}, args, nil); err != nil {
		return ProbeFailed, err.Error()
	}
	if err := rt.Sync(); err != nil {
		return ProbeFailed, err.Error()
	}
	got := make([][]byte, len(bufs))
	for i, b := range bufs {
		got[i] = b.Bytes()[:len(init[i])]
	}
	if err := p.check(got); err != nil {
		return ProbeWrong, err.Error()
	}
	return ProbePassed, ""
}

// familySays is the capability a probe tests as the device's family
// implies it (reported holds the caps derived from supportsFamily).
func familySays(kernel string, reported Caps) bool {
	switch kernel {
	case "probe_simd", "probe_matrix_float", "probe_matrix_half":
		return reported.Flavour == Simd
	case "probe_matrix_bfloat":
		return reported.Flavour == Simd && reported.BFloat
	case "probe_bfloat":
		return reported.BFloat
	}
	panic("metal: no family answer for probe " + kernel)
}

// has is the decision for one capability: a probe that ran decides, one
// that did not build leaves the family's answer.
func (r ProbeResult) has(family bool) bool {
	switch r.Outcome {
	case ProbePassed:
		return true
	case ProbeUnbuilt:
		return family
	}
	return false
}

// probedCaps returns the caps to run with: reported (from supportsFamily)
// with the flavour and bfloat decided by the probes' results, and Probed
// saying, in one line, what each probe found against the family's answer.
func probedCaps(reported Caps, rs []ProbeResult) Caps {
	c := reported
	have := map[string]bool{}
	var parts []string
	for _, r := range rs {
		fam := familySays(r.Kernel, reported)
		have[r.Kernel] = r.has(fam)
		s := fmt.Sprintf("%s %s (supportsFamily: %s)", r.What, yesNo(have[r.Kernel]), yesNo(fam))
		if r.Outcome != ProbePassed {
			s += ", probe " + r.Outcome.String() + ": " + shorten(r.Detail, 96)
		}
		parts = append(parts, s)
	}
	c.Flavour = Portable
	if have["probe_simd"] && have["probe_matrix_float"] {
		c.Flavour = Simd
	}
	c.BFloat = have["probe_bfloat"]
	c.Probed = "probed: " + strings.Join(parts, "; ")
	return c
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shorten cuts s to n runes on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
