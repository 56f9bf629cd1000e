package metal

import "testing"

func TestPeak(t *testing.T) {
	for _, c := range []struct {
		name      string
		flops, bw float64
	}{
		{"Apple M2 Max", 13.6e12, 400e9}, {"Apple M2", 3.6e12, 100e9}, {"Apple M1 Pro", 5.3e12, 200e9},
		{"Apple Paravirtual device", 0, 0},
	} {
		b := &Backend{caps: Caps{Name: c.name}}
		if f, bw := b.Peak(); f != c.flops || bw != c.bw {
			t.Errorf("%s: peak %g, %g; want %g, %g", c.name, f, bw, c.flops, c.bw)
		}
	}
}
