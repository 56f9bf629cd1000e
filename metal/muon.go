package metal

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// muon: shaders/muon.metal, one thread per element.

func init() { supported[backend.OpMuon] = true }

// MuonMomentum is Nesterov momentum:
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf, geff, g F32, same number of elements
//
// geff may alias g.
func (b *Backend) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	const op = "MuonMomentum"
	checkDType(op, backend.F32, buf, geff, g)
	n := g.Len()
	checkLen(op, n, buf, geff)
	if n == 0 {
		return
	}
	b.a.momentum = shaders.MomentumArgs{N: uint32(n), Momentum: momentum}
	b.begin()
	b.arg(buf)
	b.arg(g)
	b.arg(geff)
	bytesArg(b, &b.a.momentum)
	b.dispatch1D(b.pipe("muon", "momentum", backend.F32), n)
}
