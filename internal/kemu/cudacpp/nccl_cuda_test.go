//go:build cuda

package cudacpp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/internal/dl"
)

// The stand-in NCCL's tests run ranks as processes of testdata/nccl_rank.c,
// a C program that loads the stand-in's libcuda.so.1 and libnccl.so.2 with
// dlopen, and compare what they report with references computed here.

// NCCL's values (nccl.h, as its documentation gives them).
const (
	ncclSuccess         = 0
	ncclSystemError     = 2
	ncclInvalidArgument = 4
	ncclInvalidUsage    = 5
	ncclRemoteError     = 6
	cudaLaunchFailed    = 719 // CUDA_ERROR_LAUNCH_FAILED

	tInt8, tUint8, tInt32, tUint32, tInt64, tUint64, tFloat16, tFloat32, tFloat64, tBfloat16 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9

	opSum, opProd, opMax, opMin, opAvg = 0, 1, 2, 3, 4
)

var typeSize = [...]int{1, 1, 4, 4, 8, 8, 2, 4, 8, 2}

var (
	rankOnce sync.Once
	rankBin  string
	rankErr  error
)

// ncclRank compiles testdata/nccl_rank.c once.
func ncclRank(t *testing.T) string {
	t.Helper()
	if setupErr != nil {
		skipOrFail(t, setupErr)
	}
	rankOnce.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		dir, err := os.MkdirTemp("", "golf-nccl-rank-")
		if err != nil {
			rankErr = err
			return
		}
		rankBin = filepath.Join(dir, "nccl_rank")
		out, err := exec.Command(strings.Fields(cc)[0], "-std=c11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Wextra", "-Werror",
			"-o", rankBin, "testdata/nccl_rank.c", "-ldl", "-lpthread").CombinedOutput()
		if err != nil {
			rankErr = fmt.Errorf("compiling testdata/nccl_rank.c: %v\n%s", err, out)
		}
	})
	if rankErr != nil {
		skipOrFail(t, rankErr)
	}
	return rankBin
}

var newIDFn = sync.OnceValues(func() (func(*[128]byte) int32, error) {
	h, err := dl.Open(filepath.Join(setupLib.Dir, NCCLName), purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	sym, err := purego.Dlsym(h, "ncclGetUniqueId")
	if err != nil {
		return nil, err
	}
	var f func(*[128]byte) int32
	purego.RegisterFunc(&f, sym)
	return f, nil
})

// newID is a unique id from the stand-in's ncclGetUniqueId, in this
// process (as rank 0 of a trainer makes it and hands it to the others).
func newID(t *testing.T) [128]byte {
	t.Helper()
	f, err := newIDFn()
	require.NoError(t, err)
	var id [128]byte
	require.EqualValues(t, ncclSuccess, f(&id))
	return id
}

// segment is the shared memory file the id names.
func segment(id [128]byte) string {
	name := id[16:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return "/dev/shm" + string(name)
}

// rank is one rank process to start.
type rank struct {
	rank, nranks int
	env          []string
}

// report is what a rank process said.
type report struct {
	kv     map[string]string
	out    []byte // the coll scenario's results
	stderr string
	err    error // the process's exit
}

func (r report) int(t *testing.T, key string) int {
	t.Helper()
	v, ok := r.kv[key]
	require.True(t, ok, "no %s= in the rank's report %v\nstderr: %s", key, r.kv, r.stderr)
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%s", key, v)
	return n
}

// runRanks starts every rank at once and waits for all of them.
func runRanks(t *testing.T, scenario string, id [128]byte, cases string, ranks []rank, env ...string) []report {
	t.Helper()
	bin := ncclRank(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := make([]report, len(ranks))
	var wg sync.WaitGroup
	for i, rk := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			file := filepath.Join(dir, fmt.Sprintf("rank%d-%d.bin", rk.rank, i))
			cmd := exec.CommandContext(ctx, bin, setupLib.Dir, scenario, strconv.Itoa(rk.rank), strconv.Itoa(rk.nranks),
				hex.EncodeToString(id[:]), file, cases)
			cmd.Env = append(append(append(os.Environ(), "GOLF_EMU_WORKERS=1"), env...), rk.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			r := report{kv: map[string]string{}, stderr: stderr.String(), err: err}
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					r.kv[k] = v
				}
			}
			r.out, _ = os.ReadFile(file)
			out[i] = r
		}()
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the ranks did not finish")
	return out
}

func ranksOf(n int) []rank {
	rs := make([]rank, n)
	for i := range rs {
		rs[i] = rank{rank: i, nranks: n}
	}
	return rs
}

// mix is nccl_rank.c's hash of (rank, element, salt).
func mix(r, i, salt uint32) uint32 {
	h := r*0x9E3779B1 + i*0x85EBCA77 + salt*0xC2B2AE3D
	h ^= h >> 15
	h *= 0x2C1B3C6D
	h ^= h >> 12
	h *= 0x297A2D39
	h ^= h >> 15
	return h
}

// input is element i of rank r's send buffer for case salt, as
// nccl_rank.c's gen writes it: floats of exponents spread over 2^±10 (so a
// sum's rounding depends on its order), integers of every bit.
func input(typ int, r, i, salt uint32) []byte {
	h, h2 := mix(r, i, salt), mix(r+1000, i, salt)
	f := h&0x80000000 | (117+(h>>23)%20)<<23 | h&0x7fffff
	d := uint64(h&0x80000000)<<32 | uint64(1013+(h>>23)%20)<<52 | (uint64(h2)<<20^uint64(h))&0xfffffffffffff
	b := make([]byte, typeSize[typ])
	switch typ {
	case tInt8, tUint8:
		b[0] = byte(h)
	case tInt32, tUint32:
		binary.LittleEndian.PutUint32(b, h)
	case tInt64, tUint64:
		binary.LittleEndian.PutUint64(b, uint64(h2)<<32|uint64(h))
	case tFloat16:
		binary.LittleEndian.PutUint16(b, uint16(h&0x8000|(10+(h>>10)%10)<<10|h&0x3ff))
	case tFloat32:
		binary.LittleEndian.PutUint32(b, f)
	case tFloat64:
		binary.LittleEndian.PutUint64(b, d)
	case tBfloat16:
		binary.LittleEndian.PutUint16(b, uint16(f>>16))
	}
	return b
}

// f16 decodes an IEEE half.
func f16(b uint16) float64 {
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	e, m := int(b>>10&0x1f), float64(b&0x3ff)
	switch {
	case e == 0:
		return sign * math.Ldexp(m, -24)
	case e == 31:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// toF16 rounds x to the nearest half, ties to even (normal and subnormal
// halves; the tests stay in range).
func toF16(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if x < math.Ldexp(1, -14) {
		return sign | uint16(math.RoundToEven(math.Ldexp(x, 24)))
	}
	_, e := math.Frexp(x)                      // x = frac · 2^e, frac in [0.5, 1)
	q := math.RoundToEven(math.Ldexp(x, 11-e)) // 1024..2048
	exp := e - 1 + 15
	if q == 2048 {
		q, exp = 1024, exp+1
	}
	return sign | uint16(exp)<<10 | uint16(q-1024)
}

// toBF16 rounds x (a float32) to the nearest bfloat16, ties to even, by
// comparing the distances to the two bfloat16 neighbours.
func toBF16(x float32) uint16 {
	lo := uint16(math.Float32bits(x) >> 16)
	hi := lo + 1
	dl := math.Abs(float64(x) - float64(math.Float32frombits(uint32(lo)<<16)))
	dh := math.Abs(float64(math.Float32frombits(uint32(hi)<<16)) - float64(x))
	if dl < dh || dl == dh && lo&1 == 0 {
		return lo
	}
	return hi
}

// reduceRef is op over ranks 0..n−1 in rank order, of element i of case
// salt: floats added (multiplied) in that order in the type's own precision
// (float16 and bfloat16 in float32, rounded once), integers wrapping.
func reduceRef(typ, op, n int, i, salt uint32, order []int) []byte {
	vals := make([][]byte, n)
	for r := range vals {
		vals[r] = input(typ, uint32(order[r]), i, salt)
	}
	out := make([]byte, typeSize[typ])
	switch typ {
	case tFloat32, tFloat16, tBfloat16:
		load := func(b []byte) float32 {
			switch typ {
			case tFloat16:
				return float32(f16(binary.LittleEndian.Uint16(b)))
			case tBfloat16:
				return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
			}
			return math.Float32frombits(binary.LittleEndian.Uint32(b))
		}
		acc := load(vals[0])
		for _, v := range vals[1:] {
			x := load(v)
			switch op {
			case opSum, opAvg:
				acc += x
			case opProd:
				acc *= x
			case opMax:
				acc = max(acc, x)
			case opMin:
				acc = min(acc, x)
			}
		}
		if op == opAvg {
			acc /= float32(n)
		}
		switch typ {
		case tFloat16:
			binary.LittleEndian.PutUint16(out, toF16(float64(acc)))
		case tBfloat16:
			binary.LittleEndian.PutUint16(out, toBF16(acc))
		default:
			binary.LittleEndian.PutUint32(out, math.Float32bits(acc))
		}
	case tFloat64:
		acc := math.Float64frombits(binary.LittleEndian.Uint64(vals[0]))
		for _, v := range vals[1:] {
			x := math.Float64frombits(binary.LittleEndian.Uint64(v))
			switch op {
			case opSum, opAvg:
				acc += x
			case opProd:
				acc *= x
			case opMax:
				acc = max(acc, x)
			case opMin:
				acc = min(acc, x)
			}
		}
		if op == opAvg {
			acc /= float64(n)
		}
		binary.LittleEndian.PutUint64(out, math.Float64bits(acc))
	default:
		// Integers as int64 or uint64 of the type's width, wrapped at the end.
		signed := typ == tInt8 || typ == tInt32 || typ == tInt64
		load := func(b []byte) (int64, uint64) {
			switch typeSize[typ] {
			case 1:
				return int64(int8(b[0])), uint64(b[0])
			case 4:
				u := binary.LittleEndian.Uint32(b)
				return int64(int32(u)), uint64(u)
			}
			u := binary.LittleEndian.Uint64(b)
			return int64(u), u
		}
		wrapS := func(v int64) int64 {
			switch typeSize[typ] {
			case 1:
				return int64(int8(v))
			case 4:
				return int64(int32(v))
			}
			return v
		}
		wrapU := func(v uint64) uint64 {
			switch typeSize[typ] {
			case 1:
				return uint64(uint8(v))
			case 4:
				return uint64(uint32(v))
			}
			return v
		}
		s, u := load(vals[0])
		for _, v := range vals[1:] {
			xs, xu := load(v)
			switch op {
			case opSum, opAvg:
				s, u = wrapS(s+xs), wrapU(u+xu)
			case opProd:
				s, u = wrapS(s*xs), wrapU(u*xu)
			case opMax:
				s, u = max(s, xs), max(u, xu)
			case opMin:
				s, u = min(s, xs), min(u, xu)
			}
		}
		if op == opAvg {
			s, u = s/int64(n), u/uint64(n)
		}
		bits := u
		if signed {
			bits = uint64(s)
		}
		for k := range out {
			out[k] = byte(bits >> (8 * k))
		}
	}
	return out
}

// collCase is one collective of the coll scenario.
type collCase struct {
	kind           string // ar, bc, rs, ag
	typ, op, count int
	inPlace        bool
	root           int
}

func (c collCase) spec() string {
	ip := 0
	if c.inPlace {
		ip = 1
	}
	return fmt.Sprintf("%s:%d:%d:%d:%d:%d", c.kind, c.typ, c.op, c.count, ip, c.root)
}

// want is what rank me receives for case salt.
func (c collCase) want(n, me int, salt uint32) []byte {
	order := make([]int, n)
	for r := range order {
		order[r] = r
	}
	var out []byte
	switch c.kind {
	case "ar":
		for i := 0; i < c.count; i++ {
			out = append(out, reduceRef(c.typ, c.op, n, uint32(i), salt, order)...)
		}
	case "bc":
		for i := 0; i < c.count; i++ {
			out = append(out, input(c.typ, uint32(c.root), uint32(i), salt)...)
		}
	case "rs":
		for i := 0; i < c.count; i++ {
			out = append(out, reduceRef(c.typ, c.op, n, uint32(me*c.count+i), salt, order)...)
		}
	case "ag":
		for r := 0; r < n; r++ {
			for i := 0; i < c.count; i++ {
				out = append(out, input(c.typ, uint32(r), uint32(i), salt)...)
			}
		}
	}
	return out
}

func (c collCase) recvBytes(n int) int {
	if c.kind == "ag" {
		return n * c.count * typeSize[c.typ]
	}
	return c.count * typeSize[c.typ]
}

func collCases(n int) []collCase {
	return []collCase{
		{kind: "ar", typ: tFloat32, op: opSum, count: 3001},
		{kind: "ar", typ: tFloat32, op: opSum, count: 3001, inPlace: true},
		{kind: "ar", typ: tFloat32, op: opMax, count: 1000},
		{kind: "ar", typ: tFloat32, op: opMin, count: 1000},
		{kind: "ar", typ: tFloat32, op: opProd, count: 1000},
		{kind: "ar", typ: tFloat32, op: opAvg, count: 1000},
		{kind: "ar", typ: tBfloat16, op: opSum, count: 2049},
		{kind: "ar", typ: tBfloat16, op: opMax, count: 2049, inPlace: true},
		{kind: "ar", typ: tFloat16, op: opSum, count: 1500},
		{kind: "ar", typ: tFloat64, op: opSum, count: 1001},
		{kind: "ar", typ: tInt32, op: opSum, count: 777},
		{kind: "ar", typ: tInt32, op: opProd, count: 777},
		{kind: "ar", typ: tInt32, op: opAvg, count: 777},
		{kind: "ar", typ: tUint32, op: opMax, count: 777},
		{kind: "ar", typ: tInt64, op: opSum, count: 555},
		{kind: "ar", typ: tUint64, op: opProd, count: 555},
		{kind: "ar", typ: tUint8, op: opSum, count: 999},
		{kind: "ar", typ: tInt8, op: opMin, count: 999},
		{kind: "bc", typ: tFloat32, count: 3001, root: n - 1},
		{kind: "bc", typ: tBfloat16, count: 2049, inPlace: true},
		{kind: "rs", typ: tFloat32, op: opSum, count: 777},
		{kind: "rs", typ: tBfloat16, op: opSum, count: 300, inPlace: true},
		{kind: "ag", typ: tFloat32, count: 555},
		{kind: "ag", typ: tBfloat16, count: 333, inPlace: true},
	}
}

// TestNCCLCollectives: 2 and 4 rank processes run every collective (every
// type, every op, in place and not, buffers larger than the slot so they go
// in chunks) queued between the copies in and out on one stream; each
// rank's result is the reference's, bit for bit: the rank-order reduction
// computed here in the type's own arithmetic, rounded once to nearest even
// for float16 and bfloat16. Two runs with different slot sizes give the
// same bits.
func TestNCCLCollectives(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			cases := collCases(n)
			specs := make([]string, len(cases))
			for i, c := range cases {
				specs[i] = c.spec()
			}
			var runs [][]report
			for _, slot := range []string{"4096", ""} {
				id := newID(t)
				reps := runRanks(t, "coll", id, strings.Join(specs, ","), ranksOf(n), "GOLF_STANDIN_NCCL_SLOT_BYTES="+slot)
				for r, rep := range reps {
					require.NoError(t, rep.err, "rank %d: %s", r, rep.stderr)
					require.Equal(t, "1", rep.kv["ok"], "rank %d: %v %s", r, rep.kv, rep.stderr)
					assert.Equal(t, n, rep.int(t, "count"))
					assert.Equal(t, r, rep.int(t, "userrank"))
					// Stats: inits, run, all-reduces, broadcasts,
					// reduce-scatters, all-gathers, bytes, failures, aborts.
					var nbytes int
					kinds := map[string]int{}
					for _, c := range cases {
						kinds[c.kind]++
						b := c.count * typeSize[c.typ]
						if c.kind == "rs" {
							b *= n
						}
						nbytes += b
					}
					assert.Equal(t, fmt.Sprintf("1,%d,%d,%d,%d,%d,%d,0,0", len(cases), kinds["ar"], kinds["bc"], kinds["rs"], kinds["ag"], nbytes),
						rep.kv["stats"], "rank %d's counters", r)
				}
				_, err := os.Stat(segment(id))
				assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
				runs = append(runs, reps)
			}
			for r := 0; r < n; r++ {
				got := runs[0][r].out
				off := 0
				for salt, c := range cases {
					size := c.recvBytes(n)
					require.GreaterOrEqual(t, len(got), off+size, "rank %d's results end early", r)
					want := c.want(n, r, uint32(salt))
					if !bytes.Equal(want, got[off:off+size]) {
						for k := 0; k < size; k++ {
							if want[k] != got[off+k] {
								t.Fatalf("rank %d, case %s: byte %d (element %d) is %#x, the reference's %#x", r, c.spec(), k,
									k/typeSize[c.typ], got[off+k], want[k])
							}
						}
					}
					off += size
				}
				assert.Equal(t, off, len(got), "rank %d's results", r)
				assert.True(t, bytes.Equal(got, runs[1][r].out), "rank %d: the runs with 4 KiB and 1 MiB slots differ", r)
			}
			// Every rank received the same bits (reduce-scatter: each its
			// own span).
			off := 0
			for _, c := range cases {
				size := c.recvBytes(n)
				for r := 1; r < n && c.kind != "rs"; r++ {
					assert.True(t, bytes.Equal(runs[0][0].out[off:off+size], runs[0][r].out[off:off+size]),
						"case %s: rank %d differs from rank 0", c.spec(), r)
				}
				off += size
			}
		})
	}
}

// TestNCCLReferenceOrder: the float32 reference depends on the order of
// the ranks (so TestNCCLCollectives would see a reduction in another
// order, a tree's for one), and agrees with the float64 sum to float32's
// rounding.
func TestNCCLReferenceOrder(t *testing.T) {
	const n, count = 4, 3001
	differ := 0
	for i := uint32(0); i < count; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(reduceRef(tFloat32, opSum, n, i, 0, []int{0, 1, 2, 3})))
		var v [n]float32
		exact, mag := 0.0, 0.0
		for r := range v {
			v[r] = math.Float32frombits(binary.LittleEndian.Uint32(input(tFloat32, uint32(r), i, 0)))
			exact += float64(v[r])
			mag += math.Abs(float64(v[r]))
		}
		if tree := (v[0] + v[1]) + (v[2] + v[3]); tree != got {
			differ++
		}
		require.InDelta(t, exact, float64(got), 3*mag*0x1p-24, "element %d", i)
	}
	assert.Greater(t, differ, count/20, "the rank-order sum should differ from the tree sum for many elements")
	// bfloat16 rounding: ties go to even.
	assert.Equal(t, uint16(0x3f80), toBF16(math.Float32frombits(0x3f808000)))
	assert.Equal(t, uint16(0x3f82), toBF16(math.Float32frombits(0x3f818000)))
	assert.Equal(t, uint16(0x3c00), toF16(1))
	assert.Equal(t, uint16(0x3c00), toF16(1+0x1p-11), "a tie rounds to even")
	assert.Equal(t, uint16(0x3c02), toF16(1+3*0x1p-11))
}

// TestNCCLDeadRank: a rank that exits, or is killed, after init fails the
// others' next collective within a bounded time, with a message naming it;
// the survivors' queue fails as a faulting kernel's does, and the segment
// is removed.
func TestNCCLDeadRank(t *testing.T) {
	for _, tc := range []struct {
		n, victim int
		how       string
	}{{2, 1, "kill"}, {4, 2, "exit"}} {
		t.Run(fmt.Sprintf("ranks=%d,%s", tc.n, tc.how), func(t *testing.T) {
			id := newID(t)
			reps := runRanks(t, "die", id, "", ranksOf(tc.n), fmt.Sprintf("VICTIM=%d", tc.victim), "HOW="+tc.how)
			for r, rep := range reps {
				if r == tc.victim {
					require.Error(t, rep.err, "the victim exits")
					continue
				}
				require.NoError(t, rep.err, "rank %d: %s", r, rep.stderr)
				assert.Equal(t, ncclSuccess, rep.int(t, "init"))
				assert.Equal(t, ncclSuccess, rep.int(t, "enqueue"), "the collective is queued")
				assert.Equal(t, cudaLaunchFailed, rep.int(t, "sync"), "rank %d: the stream's wait fails", r)
				assert.Less(t, rep.int(t, "ms"), 3000, "rank %d noticed within a bounded time", r)
				assert.Equal(t, ncclRemoteError, rep.int(t, "async"), "ncclCommGetAsyncError")
				assert.Contains(t, rep.kv["msg"], fmt.Sprintf("rank %d (pid", tc.victim), "rank %d's message", r)
				assert.Contains(t, rep.kv["msg"], "exited")
				assert.Contains(t, rep.stderr, "ncclAllReduce(rank", "the failed work named on stderr")
				assert.Equal(t, ncclSuccess, rep.int(t, "destroy"))
			}
			_, err := os.Stat(segment(id))
			assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
		})
	}
}

// TestNCCLAbort: ncclCommAbort from another thread unblocks a rank waiting
// in a collective, and the other rank's collective then fails promptly,
// naming the rank that aborted.
func TestNCCLAbort(t *testing.T) {
	id := newID(t)
	reps := runRanks(t, "abort", id, "", ranksOf(2))
	r0, r1 := reps[0], reps[1]
	require.NoError(t, r0.err, r0.stderr)
	require.NoError(t, r1.err, r1.stderr)
	assert.Equal(t, ncclSuccess, r0.int(t, "abort"))
	assert.Equal(t, cudaLaunchFailed, r0.int(t, "sync"), "rank 0's wait ends in failure")
	assert.GreaterOrEqual(t, r0.int(t, "ms"), 250, "rank 0 waited for rank 1 until the abort")
	assert.Less(t, r0.int(t, "afterabortms"), 1000, "the abort unblocked rank 0 promptly")
	assert.Contains(t, r0.kv["msg"], "aborted (ncclCommAbort)")
	assert.Equal(t, cudaLaunchFailed, r1.int(t, "sync"), "rank 1's collective fails")
	assert.Less(t, r1.int(t, "ms"), 1000, "rank 1 noticed promptly")
	assert.Equal(t, ncclRemoteError, r1.int(t, "async"))
	assert.Contains(t, r1.kv["msg"], "rank 0 aborted the communicator (ncclCommAbort)")
	_, err := os.Stat(segment(id))
	assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
}

// TestNCCLInitTimeout: with a rank missing, init fails after
// GOLF_STANDIN_NCCL_TIMEOUT on every rank that came, naming the missing one.
func TestNCCLInitTimeout(t *testing.T) {
	id := newID(t)
	reps := runRanks(t, "init", id, "", []rank{{rank: 0, nranks: 3}, {rank: 2, nranks: 3}}, "GOLF_STANDIN_NCCL_TIMEOUT=1")
	for _, rep := range reps {
		require.NoError(t, rep.err, rep.stderr)
		code := rep.int(t, "init")
		assert.Contains(t, []int{ncclSystemError, ncclRemoteError}, code)
		assert.Contains(t, rep.kv["msg"], "timed out after 1s (GOLF_STANDIN_NCCL_TIMEOUT)")
		assert.Contains(t, rep.kv["msg"], "2 of 3 attached, missing rank 1")
		assert.GreaterOrEqual(t, rep.int(t, "initms"), 900)
		assert.Less(t, rep.int(t, "initms"), 3000)
	}
	_, err := os.Stat(segment(id))
	assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
}

// TestNCCLNoLeftovers: ranks that exit without destroying their
// communicator leave no segment behind.
func TestNCCLNoLeftovers(t *testing.T) {
	id := newID(t)
	reps := runRanks(t, "init", id, "", ranksOf(2), "NODESTROY=1")
	for _, rep := range reps {
		require.NoError(t, rep.err, rep.stderr)
		assert.Equal(t, ncclSuccess, rep.int(t, "init"))
		assert.NotContains(t, rep.kv, "destroy")
	}
	_, err := os.Stat(segment(id))
	assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
}

// TestNCCLInitMisuse: a rank claimed twice, or an nranks that differs from
// the communicator's, is ncclInvalidUsage at once for the rank that comes
// second (the first then times out).
func TestNCCLInitMisuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ranks []rank
		want  string
	}{
		{"duplicate", []rank{{rank: 0, nranks: 2}, {rank: 0, nranks: 2}}, "rank 0 is already attached to this unique id (by pid"},
		{"nranks", []rank{{rank: 0, nranks: 2}, {rank: 1, nranks: 3}}, "the communicator of this unique id was created with nranks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newID(t)
			reps := runRanks(t, "init", id, "", tc.ranks, "GOLF_STANDIN_NCCL_TIMEOUT=1.5")
			var codes []int
			for _, rep := range reps {
				require.NoError(t, rep.err, rep.stderr)
				code := rep.int(t, "init")
				codes = append(codes, code)
				if code == ncclInvalidUsage {
					assert.Contains(t, rep.kv["msg"], tc.want)
					assert.Less(t, rep.int(t, "initms"), 1000, "refused at once")
				} else {
					assert.Contains(t, rep.kv["msg"], "timed out after 1.5s")
				}
			}
			assert.ElementsMatch(t, []int{ncclInvalidUsage, ncclSystemError}, codes)
			_, err := os.Stat(segment(id))
			assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
		})
	}
}

// TestNCCLAPI: one rank: ncclGetVersion, ncclCommInitRankConfig's checks
// of the config (magic, size, blocking) and of the rank and the id, the
// collectives' checks of their arguments (host memory, past an
// allocation's end, a type, an op, stream 0, a root), a one-rank
// all-reduce (avg), finalize, destroy.
func TestNCCLAPI(t *testing.T) {
	id := newID(t)
	reps := runRanks(t, "api", id, "", ranksOf(1))
	rep := reps[0]
	require.NoError(t, rep.err, rep.stderr)
	want := map[string]int{
		"version": 22203, "badmagic": ncclInvalidArgument, "badsize": ncclInvalidArgument,
		"badblocking": ncclInvalidArgument, "badrank": ncclInvalidArgument, "badid": ncclInvalidArgument,
		"groupend": ncclInvalidUsage, "init": ncclSuccess, "count": 1, "userrank": 0, "cudevice": 0,
		"hostptr": ncclInvalidArgument, "pastend": ncclInvalidArgument, "badtype": ncclInvalidArgument,
		"badop": ncclInvalidArgument, "stream0": ncclInvalidArgument, "badroot": ncclInvalidArgument,
		"one": ncclSuccess, "async": ncclSuccess, "finalize": ncclSuccess, "afterfinalize": ncclInvalidUsage,
		"destroy": ncclSuccess, "twice": ncclInvalidArgument,
	}
	for k, v := range want {
		assert.Equal(t, v, rep.int(t, k), k)
	}
	assert.Equal(t, "3.5", rep.kv["onevalue"], "one rank's avg is its own value")
	assert.Contains(t, rep.kv["badmagicmsg"], "NCCL_CONFIG_INITIALIZER")
	assert.Contains(t, rep.kv["hostptrmsg"], "not inside any live device allocation")
	assert.Contains(t, rep.kv["errstr"], "remote process exited")
	_, err := os.Stat(segment(id))
	assert.True(t, os.IsNotExist(err), "the segment %s is left behind: %v", segment(id), err)
}

// ncclExports are the calls of NCCL's API the stand-in exports.
var ncclExports = []string{"ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitRankConfig",
	"ncclAllReduce", "ncclBroadcast", "ncclReduceScatter", "ncclAllGather", "ncclGroupStart", "ncclGroupEnd",
	"ncclCommGetAsyncError", "ncclCommAbort", "ncclCommDestroy", "ncclCommFinalize", "ncclCommCount",
	"ncclCommCuDevice", "ncclCommUserRank", "ncclGetErrorString", "ncclGetLastError"}

// TestNCCLLibrary: the stand-in's directory holds libnccl.so.2, the same
// library as libcuda.so.1 (so its collectives join the driver's queues),
// exporting NCCL's calls; the unique id holds the creator's pid and a
// random segment name.
func TestNCCLLibrary(t *testing.T) {
	if setupErr != nil {
		skipOrFail(t, setupErr)
	}
	a, err := os.Stat(filepath.Join(setupLib.Dir, NCCLName))
	require.NoError(t, err)
	b, err := os.Stat(filepath.Join(setupLib.Dir, DriverName))
	require.NoError(t, err)
	assert.True(t, os.SameFile(a, b), "libnccl.so.2 and libcuda.so.1 are one library")
	h, err := dl.Open(filepath.Join(setupLib.Dir, NCCLName), purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	for _, name := range append(ncclExports, "golf_standin_nccl_stats") {
		_, err := purego.Dlsym(h, name)
		assert.NoError(t, err, name)
	}
	id1, id2 := newID(t), newID(t)
	assert.Equal(t, "golfnccl", string(id1[:8]))
	assert.EqualValues(t, os.Getpid(), binary.LittleEndian.Uint32(id1[8:]))
	assert.True(t, strings.HasPrefix(segment(id1), fmt.Sprintf("/dev/shm/golf-nccl-%d-", os.Getpid())), segment(id1))
	assert.NotEqual(t, segment(id1), segment(id2), "every id names a segment of its own")
}

// compileNCCL compiles src/nccl.cc (text) with the stand-in's flags and
// -Werror, -fsyntax-only, adding extra flags.
func compileNCCL(t *testing.T, text []byte, extra ...string) error {
	t.Helper()
	files, err := inputs(Config{})
	require.NoError(t, err)
	dir := t.TempDir()
	for n, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nccl.cc"), text, 0o644))
	cxx, err := compiler("")
	if err != nil {
		skipOrFail(t, err)
	}
	args := append(append(append([]string{}, cxxFlags...), "-Werror", "-fsyntax-only", "-I", "."), extra...)
	cmd := exec.Command(cxx, append(args, "nccl.cc")...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// TestNCCLWarningFree: nccl.cc compiles without a warning under the
// stand-in's flags.
func TestNCCLWarningFree(t *testing.T) {
	text, err := src.ReadFile("src/nccl.cc")
	require.NoError(t, err)
	require.NoError(t, compileNCCL(t, text))
}

// TestNCCLHeader: nccl.cc compiled against NCCL 2.22's own nccl.h
// (libnccl-dev, unpacked under $GOLF_NCCL_DIR, default /tmp/golf-nccl):
// every exported definition must match the header's declaration and every
// value nccl.cc's static_asserts name the header's; a signature changed in
// a copy of nccl.cc must fail to compile, so the check can fail. The
// header's CUDA includes are stubbed with cudaStream_t as the runtime
// declares it.
func TestNCCLHeader(t *testing.T) {
	root := os.Getenv("GOLF_NCCL_DIR")
	if root == "" {
		root = "/tmp/golf-nccl"
	}
	var header string
	for _, p := range []string{"root/usr/include/nccl.h", "usr/include/nccl.h", "include/nccl.h", "nccl.h"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			header = filepath.Join(root, p)
			break
		}
	}
	if header == "" {
		skipOrFail(t, fmt.Errorf("no nccl.h under %s (GOLF_NCCL_DIR; scripts/ci/trixie_libs.sh unpacks libnccl-dev there)", root))
	}
	stub := t.TempDir()
	for name, text := range map[string]string{
		"cuda_runtime.h": "#define CUDART_VERSION 11080\ntypedef struct CUstream_st* cudaStream_t;\n",
		"cuda_fp16.h":    "",
		"cuda_bf16.h":    "#define __CUDA_BF16_TYPES_EXIST__ 1\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(stub, name), []byte(text), 0o644))
	}
	text, err := src.ReadFile("src/nccl.cc")
	require.NoError(t, err)
	flags := []string{"-I", stub, fmt.Sprintf("-DGOLF_NCCL_HEADER=%q", header)}
	require.NoError(t, compileNCCL(t, text, flags...), "nccl.cc against %s", header)

	for _, mut := range []struct{ from, to string }{
		{"ncclCommCount(const ncclComm_t comm, int* count)", "ncclCommCount(const ncclComm_t comm, long* count)"},
		{"static_assert(sizeof(ncclConfig_t) == 48", "static_assert(sizeof(ncclConfig_t) == 56"},
		{"ncclAvg == 4", "ncclAvg == 5"},
	} {
		require.Contains(t, string(text), mut.from)
		bad := strings.Replace(string(text), mut.from, mut.to, 1)
		assert.Error(t, compileNCCL(t, []byte(bad), flags...), "a copy with %q must not compile against the header", mut.to)
	}
}

// ncclUID is ncclUniqueId, passed by value.
type ncclUID struct{ internal [128]byte }

// TestNCCLQueueOrder: in this process, a one-rank all-reduce queued
// between a kernel that writes its input and a memset that overwrites the
// input runs between them, and only when the host waits for the stream.
func TestNCCLQueueOrder(t *testing.T) {
	r := newRig(t)
	h, err := dl.Open(filepath.Join(setupLib.Dir, NCCLName), purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	var (
		getID     func(*ncclUID) int32
		initRank  func(*uintptr, int32, ncclUID, int32) int32
		allReduce func(send, recv uint64, count uint64, typ, op int32, comm, stream uintptr) int32
		destroy   func(uintptr) int32
	)
	purego.RegisterLibFunc(&getID, h, "ncclGetUniqueId")
	purego.RegisterLibFunc(&initRank, h, "ncclCommInitRank")
	purego.RegisterLibFunc(&allReduce, h, "ncclAllReduce")
	purego.RegisterLibFunc(&destroy, h, "ncclCommDestroy")
	var id ncclUID
	require.EqualValues(t, ncclSuccess, getID(&id))
	var comm uintptr
	require.EqualValues(t, ncclSuccess, initRank(&comm, 1, id, 0))
	defer destroy(comm)

	const n = 8 * 32 // emu_builtins: 8 values for each of 32 threads
	in, out := r.alloc(4*n), r.alloc(4*n)
	require.NoError(t, r.sync())
	before := r.h.NCCLStats()
	require.NoError(t, r.launch("emu_builtins", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, in))
	require.NoError(t, r.ctx.Do(func(d cuda.Driver) error {
		if rc := allReduce(uint64(in), uint64(out), n, tUint32, opSum, comm, uintptr(r.stream)); rc != ncclSuccess {
			return fmt.Errorf("ncclAllReduce: %d", rc)
		}
		return d.MemsetD8Async(in, 0xff, 4*n, r.stream)
	}))
	queued := r.h.NCCLStats()
	assert.Equal(t, before.AllReduces+1, queued.AllReduces, "queued")
	assert.Equal(t, before.Collectives, queued.Collectives, "run before the host waited")
	require.NoError(t, r.sync())
	assert.Equal(t, before.Collectives+1, r.h.NCCLStats().Collectives, "run at the wait")
	got := u32s(r.read(out, 4*n))
	for tx := uint32(0); tx < 32; tx++ {
		require.Equal(t, []uint32{tx, 0, 0, 0, 32, 1, 1, 1}, got[8*tx:8*tx+8], "thread %d: the kernel's output, reduced", tx)
	}
	for _, v := range u32s(r.read(in, 4*n)) {
		require.Equal(t, uint32(0xffffffff), v, "the memset after the all-reduce ran after it")
	}
}
