package metal

import "strings"

// chipPeaks are published peaks of Apple GPUs: fp32 (= fp16) FLOP/s and
// memory bandwidth in bytes/s (METAL_NOTES.md). Longer names first, so
// "M2 Max" matches before "M2".
var chipPeaks = []struct {
	name      string
	flops, bw float64
}{
	{"M1 Max", 10.6e12, 400e9}, {"M1 Pro", 5.3e12, 200e9}, {"M1", 2.6e12, 68e9},
	{"M2 Max", 13.6e12, 400e9}, {"M2 Pro", 6.8e12, 200e9}, {"M2", 3.6e12, 100e9},
	{"M3", 3.6e12, 100e9}, {"M4", 4.3e12, 120e9},
}

// Peak returns the device's published fp32 FLOP/s and bandwidth, or zeros
// for a device not in the table.
func (b *Backend) Peak() (flops, bytesPerSec float64) {
	for _, c := range chipPeaks {
		if strings.Contains(b.caps.Name, c.name) {
			return c.flops, c.bw
		}
	}
	return 0, 0
}
