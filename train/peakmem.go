package train

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/backend"
)

// peakMemory measures what train_gpt.py logs after its training loop,
//
//	peak memory allocated: A MiB reserved: R MiB
//
// (whole MiB, rounded down). A is the most bytes of live tensors at once
// during this run, as the backend counts them (backend.MemoryStats): the
// counterpart of torch.cuda.max_memory_allocated, the same on every
// machine for a configuration. R is, for the CPU backend (whose tensors are
// this process's memory), the process's peak resident set (VmHWM in
// /proc/self/status), reset to the current resident set when the run
// starts (/proc/self/clear_refs): beside the tensors it holds the Go heap's
// free but unreturned memory (what PyTorch's caching allocator reserves
// beyond what it allocated), the backend's scratch, the token streams and
// the program. Where that is not available (not Linux, /proc unreadable),
// or when the tensors live in a GPU's memory, R is A: no other figure is
// known. A backend that does not count its tensors gets no line at all.
// golf info's plan (PlanMemory, "peak") is A for a configuration, counted
// before the run over the same allocation path; it reads the validation
// split's length from the shard headers for the shorter last batch, and
// without it plans the longest such batch (TestPlanBoundsRunPeak).
//
// golf logs no `Code size:` or `Total submission size` line. The challenge
// counts train_gpt.py's bytes because that script and the compressed model
// together are its 16 MB artifact; golf is not such a script (a record is
// submitted as a train_gpt.py), and nothing of golf's stands in for one
// honestly: the module's source is about 1.7 MB of Go, shaders, CUDA and an
// emulator, most of it unrelated to the model, and a count fixed at build
// time goes stale with every edit. The log gives the compressed model
// alone (serialized_model_int8_zlib:N bytes), golf report's model_bytes.
type peakMemory struct {
	ms    backend.MemoryStats // nil: the backend does not count
	live0 int64               // bytes live before the run (earlier runs' tensors on a shared backend)
	rss   bool                // R from VmHWM
}

func startPeakMemory(b backend.Backend) peakMemory {
	ms, ok := b.(backend.MemoryStats)
	if !ok {
		return peakMemory{}
	}
	p := peakMemory{ms: ms}
	p.live0, _ = ms.AllocatedBytes()
	ms.ResetPeakAllocated()
	if b.Name() == "cpu" {
		// "5" resets the peak resident set to the current one; without it
		// the peak is the process's since it started, still an honest bound.
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		_, p.rss = vmHWM()
	}
	return p
}

// bytes returns A and R in bytes; ok is false when the backend does not count.
func (p peakMemory) bytes() (allocated, reserved int64, ok bool) {
	if p.ms == nil {
		return 0, 0, false
	}
	_, peak := p.ms.AllocatedBytes()
	allocated = max(peak-p.live0, 0)
	reserved = allocated
	if p.rss {
		if hwm, ok := vmHWM(); ok {
			reserved = hwm
		}
	}
	return allocated, reserved, true
}

// line is the log line, "" when the backend does not count.
func (p peakMemory) line() string {
	a, r, ok := p.bytes()
	if !ok {
		return ""
	}
	return fmt.Sprintf("peak memory allocated: %d MiB reserved: %d MiB", a>>20, r>>20)
}

// vmHWM reads the process's peak resident set from /proc/self/status.
func vmHWM() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, unit, _ := strings.Cut(strings.TrimSpace(rest), " ")
		n, err := strconv.ParseInt(kb, 10, 64)
		if err != nil || strings.TrimSpace(unit) != "kB" {
			return 0, false
		}
		return n << 10, true
	}
	return 0, false
}
