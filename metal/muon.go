package metal

import "github.com/golf-ml/golf/backend"

// muon: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	unsupported(backend.OpMuon)
}
