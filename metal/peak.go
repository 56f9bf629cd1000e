package metal

import "strings"

// Chip is one Apple-silicon GPU with its published peaks: the roofline that
// `golf bench` measures efficiency against and that the predicted-time
// model (predict.go) divides work by.
type Chip struct {
	// Name is the chip as the Metal device names it, without "Apple ":
	// "M3 Max" for the device "Apple M3 Max".
	Name string
	// GPUCores is the largest GPU configuration of the chip. The device
	// name does not say which binned part a Mac has (an M3 Max has 30 or
	// 40 cores), so the peaks are those of the full part: a binned part's
	// efficiency is understated, never overstated beyond its own peak.
	GPUCores int
	// FLOPS is the fp32 (= fp16) peak in FLOP/s: cores × 128 ALUs × 2
	// (fused multiply-add) × the GPU clock.
	FLOPS float64
	// Bandwidth is the unified-memory bandwidth in bytes/s (Apple's
	// technical specifications of the Macs that carry the chip).
	Bandwidth float64
	// BF16Emulated is true where bfloat arithmetic goes through fp32
	// (M1, M2: bf16 matmuls measured 1.5–1.8× slower than fp16 there;
	// M3 and M4 are reported native).
	BF16Emulated bool
}

// gpuFLOPS is cores × 128 fp32 ALUs × 2 FLOP per FMA × clock (GHz).
func gpuFLOPS(cores int, ghz float64) float64 { return float64(cores) * 128 * 2 * ghz * 1e9 }

// Chips is the table of Apple-silicon GPUs, M1 to M4 with their Pro, Max
// and Ultra parts, longer names first within a generation. ChipOf matches
// whole names, so "M3 Max" never takes "M3"'s peaks.
//
// Sources. Clocks: M1 1.278 GHz, M1 Pro/Max/Ultra 1.296 GHz (Apple's
// "2.6 / 5.2 / 10.4 / 21 TFLOPS" for M1 / Pro / Max / Ultra, Oct 2020 –
// Mar 2022 press releases, are within 2% of cores × 256 × these clocks); M2 family
// 1.398 GHz (Apple: M2 "3.6 TFLOPS", M2 Pro 6.8, M2 Max 13.6, M2 Ultra
// 27.2, June 2022 – June 2023); M3 family 1.398 GHz (Apple publishes no
// TFLOPS for M3; third-party listings derive 3.58 for the 10-core M3 and
// 14.3 for the 40-core M3 Max from this clock); M4 family 1.578 GHz (not
// published by Apple; listings give 1.47–1.6 GHz). Bandwidths: Apple's
// technical specifications — M1 68.25 GB/s, M1 Pro 200, M1 Max 400, M1
// Ultra 800; M2 100, M2 Pro 200, M2 Max 400, M2 Ultra 800; M3 100, M3 Pro
// 150, M3 Max 400 (the 30-core part has 300), M3 Ultra 819; M4 120, M4 Pro
// 273, M4 Max 546 (the 32-core part has 410). There is no M4 Ultra.
var Chips = []Chip{
	{"M1 Ultra", 64, gpuFLOPS(64, 1.296), 800e9, true},
	{"M1 Max", 32, gpuFLOPS(32, 1.296), 400e9, true},
	{"M1 Pro", 16, gpuFLOPS(16, 1.296), 200e9, true},
	{"M1", 8, gpuFLOPS(8, 1.278), 68.25e9, true},
	{"M2 Ultra", 76, gpuFLOPS(76, 1.398), 800e9, true},
	{"M2 Max", 38, gpuFLOPS(38, 1.398), 400e9, true},
	{"M2 Pro", 19, gpuFLOPS(19, 1.398), 200e9, true},
	{"M2", 10, gpuFLOPS(10, 1.398), 100e9, true},
	{"M3 Ultra", 80, gpuFLOPS(80, 1.398), 819e9, false},
	{"M3 Max", 40, gpuFLOPS(40, 1.398), 400e9, false},
	{"M3 Pro", 18, gpuFLOPS(18, 1.398), 150e9, false},
	{"M3", 10, gpuFLOPS(10, 1.398), 100e9, false},
	{"M4 Max", 40, gpuFLOPS(40, 1.578), 546e9, false},
	{"M4 Pro", 20, gpuFLOPS(20, 1.578), 273e9, false},
	{"M4", 10, gpuFLOPS(10, 1.578), 120e9, false},
}

// slowestChip plans command buffers on devices the table does not know
// (the paravirtual GPU of CI runners, the emulator): the M1, the slowest
// GPU golf supports, so that no command buffer is predicted to run longer
// than the bound on any supported Mac.
var slowestChip = Chips[3]

// ChipOf returns the table's entry for a Metal device name: "Apple " and
// then exactly the chip's name ("Apple M2 Pro"). Any other name — a part
// the table lacks ("Apple M4 Ultra", "Apple M5"), the paravirtual GPU, an
// Intel or AMD GPU — has no entry: ok is false, so no peak is reported
// rather than a base chip's for a larger part.
func ChipOf(device string) (c Chip, ok bool) {
	name, found := strings.CutPrefix(strings.TrimSpace(device), "Apple ")
	if !found {
		return Chip{}, false
	}
	for _, ch := range Chips {
		if ch.Name == name {
			return ch, true
		}
	}
	return Chip{}, false
}

// Peak returns the device's published fp32 FLOP/s and bandwidth, or zeros
// for a device not in the table.
func (b *Backend) Peak() (flops, bytesPerSec float64) {
	c, ok := ChipOf(b.caps.Name)
	if !ok {
		return 0, 0
	}
	return c.FLOPS, c.Bandwidth
}
