package metal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeak: every Pro, Max and Ultra part gets its own peaks, not the base
// chip's (the figures below are the published ones, written out, not
// derived from the table), and a device the table does not know has none.
func TestPeak(t *testing.T) {
	for _, c := range []struct {
		device    string
		tflops    float64 // published or clock-derived fp32 TFLOP/s (±2%)
		bandwidth float64 // GB/s, Apple's specifications
	}{
		{"Apple M1", 2.6, 68.25}, {"Apple M1 Pro", 5.3, 200}, {"Apple M1 Max", 10.6, 400}, {"Apple M1 Ultra", 21.2, 800},
		{"Apple M2", 3.6, 100}, {"Apple M2 Pro", 6.8, 200}, {"Apple M2 Max", 13.6, 400}, {"Apple M2 Ultra", 27.2, 800},
		{"Apple M3", 3.58, 100}, {"Apple M3 Pro", 6.44, 150}, {"Apple M3 Max", 14.3, 400}, {"Apple M3 Ultra", 28.6, 819},
		{"Apple M4", 4.04, 120}, {"Apple M4 Pro", 8.08, 273}, {"Apple M4 Max", 16.2, 546},
	} {
		b := &Backend{caps: Caps{Name: c.device}}
		f, bw := b.Peak()
		assert.InEpsilon(t, c.tflops*1e12, f, 0.02, c.device)
		assert.InEpsilon(t, c.bandwidth*1e9, bw, 1e-9, c.device)
	}
	for _, unknown := range []string{
		"Apple Paravirtual device", "MSL emulator on the CPU", "AMD Radeon Pro 5500M",
		"Intel(R) UHD Graphics 630", "Apple M10", "Apple M5", "Apple M4 Ultra", "Apple M3 Max Extreme", "M3", "",
	} {
		b := &Backend{caps: Caps{Name: unknown}}
		f, bw := b.Peak()
		assert.Zero(t, f, unknown)
		assert.Zero(t, bw, unknown)
	}
}

// TestChipTable: M1 to M4 each have a base, Pro and Max entry (and M1–M3 an
// Ultra), and every entry is found by its own device name, so no shorter
// name shadows a longer one.
func TestChipTable(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Chips {
		names[c.Name] = true
		got, ok := ChipOf("Apple " + c.Name)
		require.True(t, ok, c.Name)
		assert.Equal(t, c.Name, got.Name)
		assert.Positive(t, c.FLOPS, c.Name)
		assert.Positive(t, c.Bandwidth, c.Name)
	}
	for _, g := range []string{"M1", "M2", "M3", "M4"} {
		for _, v := range []string{"", " Pro", " Max"} {
			assert.True(t, names[g+v], "missing %s%s", g, v)
		}
		if g != "M4" {
			assert.True(t, names[g+" Ultra"], "missing %s Ultra", g)
		}
	}
}
