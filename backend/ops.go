package backend

// Op names one forward/backward pair (or one optimizer/elementwise op) of
// the contract. Ops is the one registry that tests, benchmarks and kernel
// name derivation iterate.
type Op string

const (
	OpCast         Op = "cast"
	OpScale        Op = "scale"
	OpAxpy         Op = "axpy"
	OpReduce       Op = "reduce"
	OpEmbedding    Op = "embedding"
	OpRMSNorm      Op = "rmsnorm"
	OpResidMix     Op = "resid_mix"
	OpLinear       Op = "linear"
	OpQKNormRope   Op = "qk_norm_rope"
	OpAttention    Op = "attention"
	OpScaledAdd    Op = "scaled_add"
	OpReluSq       Op = "relu_sq"
	OpSoftcapCE    Op = "softcap_ce"
	OpAdam         Op = "adam"
	OpMuon         Op = "muon"
	OpNewtonSchulz Op = "newton_schulz"
	OpAccumulate   Op = "accumulate"
)

// Ops lists every op of the contract.
var Ops = []Op{
	OpCast, OpScale, OpAxpy, OpReduce,
	OpEmbedding, OpRMSNorm, OpResidMix, OpLinear, OpQKNormRope, OpAttention,
	OpScaledAdd, OpReluSq, OpSoftcapCE,
	OpAdam, OpMuon, OpNewtonSchulz,
	OpAccumulate,
}
