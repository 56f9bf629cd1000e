package cuda

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// MuonMomentum: buf = μ·buf + g; geff = g + μ·buf, over
// cuda/kernels/muon.cu (as metal/muon.go).
func (b *Backend) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	const op = "MuonMomentum"
	checkDType(op, backend.F32, buf, geff, g)
	n := g.Len()
	checkLen(op, n, buf, geff)
	if n == 0 {
		return
	}
	b.a.momentum = shaders.MomentumArgs{N: uint32(n), Momentum: momentum}
	b.launch1D("muon", "momentum", backend.F32, n, buf, g, geff, structArg(&b.a.momentum))
}
