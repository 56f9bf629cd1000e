package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Resources is what one compiled kernel uses, read from its cubin and from
// ptxas's report (NVRTC's log under --ptxas-options=-v).
//
// Where each number comes from, and why:
//   - Registers: the cubin's EIATTR_REGCOUNT record (in the .nv.info
//     section: [symbol index u32][count u32]). It is what the driver
//     allocates per thread.
//   - MaxThreads: the EIATTR_MAX_THREADS record of .nv.info.<kernel>
//     ([x u32][y u32][z u32], written for __launch_bounds__), as x·y·z; 0
//     when the kernel declares no bounds (then only the device's 1024
//     applies).
//   - StaticShared: the kernel's __shared__ arrays (dynamic shared memory
//     is added at launch): ptxas's "N bytes smem", checked against the size
//     of the .nv.shared.<kernel> section. For sm_90 and later that section
//     also holds the 1 KiB of shared memory the hardware reserves per
//     block (ptxas places the kernel's arrays after it), so there the
//     section is 1024 bytes larger whenever the kernel has shared arrays.
//   - SpillStores, SpillLoads, StackFrame: ptxas's "N bytes stack frame, N
//     bytes spill stores, N bytes spill loads" line. The cubin has a frame
//     size (EIATTR_FRAME_SIZE) but no record that separates spills from
//     local arrays, so the log is the one robust source, and the cache keeps
//     the log beside the cubin. Where the log has no report of a kernel, or
//     one that disagrees with the cubin on registers or shared memory,
//     NoReport says so and the three stay 0 (unknown): the backend still
//     runs the kernel, while `golf kernels` and the library's tests, which
//     exist to prove there are no spills, fail on it.
//
// The attribute ids (EIATTR_*) are NVIDIA's, unpublished in the toolkit
// headers; the values used here are the ones public readers of the format
// list (VivekPanyam/cudaparsers; GVirtuS, plugins/cudart internal header),
// and a tagged test checks them against ptxas's own report of every kernel.
type Resources struct {
	Registers    int
	MaxThreads   int
	StaticShared int
	SpillStores  int
	SpillLoads   int
	StackFrame   int
	// NoReport is why ptxas's report of the kernel was not used ("" when
	// it was): spills and stack frame are then unknown.
	NoReport string
}

// .nv.info record formats and the attributes read here.
const (
	eifmtNVal = 0x01 // attribute only (2 more bytes, unused)
	eifmtBVal = 0x02 // 1-byte value (in a 2-byte field)
	eifmtHVal = 0x03 // 2-byte value
	eifmtSVal = 0x04 // 2-byte length, then that many bytes

	eiattrMaxThreads = 0x05
	eiattrRegCount   = 0x2f
)

// nvInfoRecord is one attribute record of an .nv.info section.
type nvInfoRecord struct {
	format, attr byte
	value        uint16 // HVAL/BVAL value, or SVAL length
	payload      []byte // SVAL only
}

// parseNVInfo splits an .nv.info section into its records.
func parseNVInfo(b []byte) ([]nvInfoRecord, error) {
	var out []nvInfoRecord
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("truncated record (%d bytes left)", len(b))
		}
		r := nvInfoRecord{format: b[0], attr: b[1], value: binary.LittleEndian.Uint16(b[2:4])}
		b = b[4:]
		switch r.format {
		case eifmtNVal, eifmtBVal, eifmtHVal:
		case eifmtSVal:
			n := int(r.value)
			if n > len(b) {
				return nil, fmt.Errorf("attribute 0x%02x: payload of %d bytes, %d left", r.attr, n, len(b))
			}
			r.payload, b = b[:n], b[n:]
		default:
			return nil, fmt.Errorf("unknown record format 0x%02x (attribute 0x%02x)", r.format, r.attr)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadCubin returns the resources of every kernel (entry function) of a
// cubin, by name, from the ELF alone: Registers, MaxThreads, and in
// StaticShared the size of the .nv.shared section (which on sm_90+
// includes the reserved 1 KiB; see Resources). The log's fields stay 0;
// KernelResources completes them.
func ReadCubin(cubin []byte) (map[string]Resources, error) {
	// A cubin's ELF header stores the CUDA ABI version in e_version (0x76
	// for 11.8), which debug/elf rejects for not being EV_CURRENT; a copy
	// with e_version = 1 reads as a plain ELF64 file.
	if len(cubin) < 24 || string(cubin[:4]) != elf.ELFMAG {
		return nil, fmt.Errorf("cuda: cubin: not an ELF file")
	}
	patched := append([]byte(nil), cubin...)
	binary.LittleEndian.PutUint32(patched[20:24], uint32(elf.EV_CURRENT))
	f, err := elf.NewFile(bytes.NewReader(patched))
	if err != nil {
		return nil, fmt.Errorf("cuda: cubin: %w", err)
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("cuda: cubin symbols: %w", err)
	}
	out := map[string]Resources{}
	for _, s := range f.Sections {
		if name, ok := strings.CutPrefix(s.Name, ".text."); ok {
			if _, dup := out[name]; !dup {
				out[name] = Resources{}
			}
		}
	}
	for _, s := range f.Sections {
		switch {
		case s.Name == ".nv.info":
			recs, err := sectionRecords(s)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if r.attr != eiattrRegCount || r.format != eifmtSVal || len(r.payload) != 8 {
					continue
				}
				// Symbol index i is f.Symbols()[i-1]: debug/elf drops the
				// null symbol 0.
				idx := int(binary.LittleEndian.Uint32(r.payload[0:4]))
				if idx < 1 || idx > len(syms) {
					return nil, fmt.Errorf("cuda: cubin: REGCOUNT names symbol %d of %d", idx, len(syms))
				}
				name := syms[idx-1].Name
				if res, ok := out[name]; ok {
					res.Registers = int(binary.LittleEndian.Uint32(r.payload[4:8]))
					out[name] = res
				}
			}
		case strings.HasPrefix(s.Name, ".nv.info."):
			name := strings.TrimPrefix(s.Name, ".nv.info.")
			res, ok := out[name]
			if !ok {
				continue
			}
			recs, err := sectionRecords(s)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if r.attr == eiattrMaxThreads && r.format == eifmtSVal && len(r.payload) == 12 {
					res.MaxThreads = int(binary.LittleEndian.Uint32(r.payload[0:4])) *
						int(binary.LittleEndian.Uint32(r.payload[4:8])) *
						int(binary.LittleEndian.Uint32(r.payload[8:12]))
				}
			}
			out[name] = res
		case strings.HasPrefix(s.Name, ".nv.shared."):
			name := strings.TrimPrefix(s.Name, ".nv.shared.")
			if res, ok := out[name]; ok {
				res.StaticShared = int(s.Size)
				out[name] = res
			}
		}
	}
	return out, nil
}

// sectionRecords reads and parses an .nv.info section.
func sectionRecords(s *elf.Section) ([]nvInfoRecord, error) {
	b, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("cuda: cubin section %s: %w", s.Name, err)
	}
	recs, err := parseNVInfo(b)
	if err != nil {
		return nil, fmt.Errorf("cuda: cubin section %s: %w", s.Name, err)
	}
	return recs, nil
}

// PtxasInfo is ptxas's -v report of one entry function.
type PtxasInfo struct {
	Registers, Shared                   int
	StackFrame, SpillStores, SpillLoads int
}

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)'`)
	ptxasProps = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers`)
	ptxasSmem  = regexp.MustCompile(`, (\d+) bytes smem`)
)

// ParsePtxasLog reads the per-function lines of ptxas -v from an NVRTC
// log (NVRTC 11.8 to 13):
//
//	ptxas info    : Compiling entry function 'foo' for 'sm_80'
//	ptxas info    : Function properties for foo
//	ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 10 registers, 1200 bytes smem, 364 bytes cmem[0]
//
// Later versions put more between the registers and the shared memory
// (CUDA 13: "Used 128 registers, used 1 barriers, 8 bytes cumulative stack
// size, 18432 bytes smem, ..."), so the shared memory is found anywhere in
// that line. Only entry functions are returned (device functions that were not
// inlined get "Function properties" without a "Compiling entry" line).
func ParsePtxasLog(log string) map[string]PtxasInfo {
	out := map[string]PtxasInfo{}
	var entry, props string
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			entry, props = m[1], ""
			out[entry] = PtxasInfo{}
			continue
		}
		if m := ptxasProps.FindStringSubmatch(line); m != nil {
			props = m[1]
			continue
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil && props != "" && props == entry {
			p := out[entry]
			p.StackFrame, p.SpillStores, p.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
			out[entry] = p
			continue
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil && entry != "" {
			p := out[entry]
			p.Registers = atoi(m[1])
			if sm := ptxasSmem.FindStringSubmatch(line); sm != nil {
				p.Shared = atoi(sm[1])
			}
			out[entry] = p
			entry = ""
		}
	}
	return out
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("cuda: ptxas number %q: %v", s, err))
	}
	return n
}

// ReservedShared is the shared memory per block that sm_80 and later
// reserve for the system (cudaDevAttrReservedSharedMemoryPerBlock); the
// cubins of sm_90 and later count it in every .nv.shared section.
const ReservedShared = 1024

// KernelResources combines a cubin for arch (sm_XX) and the ptxas report
// of its compile: registers, launch bounds and static shared memory from
// the cubin, spills and stack frame from the log. A kernel of the cubin that
// the log does not report, or whose report disagrees with the cubin on
// registers or shared memory (the report would not be this kernel's), gets
// NoReport saying so, and unknown spills. The error is the cubin's alone.
func KernelResources(cubin []byte, log, arch string) (map[string]Resources, error) {
	major, err := archMajor(arch)
	if err != nil {
		return nil, err
	}
	res, err := ReadCubin(cubin)
	if err != nil {
		return nil, err
	}
	info := ParsePtxasLog(log)
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := res[n]
		section := r.StaticShared
		if major >= 9 && section > 0 {
			section -= ReservedShared
		}
		r.StaticShared = section
		p, ok := info[n]
		switch {
		case !ok:
			r.NoReport = "no ptxas report in the compile log"
		case p.Registers != r.Registers || p.Shared != section:
			r.NoReport = fmt.Sprintf("cubin says %d registers, %d B shared; ptxas says %d, %d",
				r.Registers, section, p.Registers, p.Shared)
		default:
			r.SpillStores, r.SpillLoads, r.StackFrame = p.SpillStores, p.SpillLoads, p.StackFrame
		}
		res[n] = r
	}
	return res, nil
}

// archMajor is the compute capability major of sm_XX (8 for sm_86, 9 for
// sm_90a).
func archMajor(arch string) (int, error) {
	num, ok := strings.CutPrefix(arch, "sm_")
	num = strings.TrimSuffix(num, "a")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 10 {
		return 0, fmt.Errorf("cuda: architecture %q: want sm_<number>", arch)
	}
	return n / 10, nil
}
