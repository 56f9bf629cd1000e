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

	// Fused ops (see the Backend interface).
	OpResidMixRMSNorm         Op = "resid_mix_rmsnorm"
	OpScaledAddRMSNorm        Op = "scaled_add_rmsnorm"
	OpQKNormRopePair          Op = "qk_norm_rope_pair"
	OpRMSNormResidMixBackward Op = "rmsnorm_resid_mix_bwd"
	OpSoftcapCEFused          Op = "softcap_ce_fused"
	OpLinearReluSq            Op = "linear_relu_sq"
	OpLinearScaledAdd         Op = "linear_scaled_add"
)

// Ops lists every op of the contract.
var Ops = []Op{
	OpCast, OpScale, OpAxpy, OpReduce,
	OpEmbedding, OpRMSNorm, OpResidMix, OpLinear, OpQKNormRope, OpAttention,
	OpScaledAdd, OpReluSq, OpSoftcapCE,
	OpAdam, OpMuon, OpNewtonSchulz,
	OpAccumulate,
	OpResidMixRMSNorm, OpScaledAddRMSNorm, OpQKNormRopePair,
	OpRMSNormResidMixBackward, OpSoftcapCEFused, OpLinearReluSq,
	OpLinearScaledAdd,
}

// FusedOps maps each fused op to the unfused ops of its sequence.
var FusedOps = map[Op][]Op{
	OpResidMixRMSNorm:         {OpResidMix, OpRMSNorm},
	OpScaledAddRMSNorm:        {OpScaledAdd, OpRMSNorm},
	OpQKNormRopePair:          {OpQKNormRope},
	OpRMSNormResidMixBackward: {OpRMSNorm, OpResidMix},
	OpSoftcapCEFused:          {OpSoftcapCE},
	OpLinearReluSq:            {OpLinear, OpReluSq},
	OpLinearScaledAdd:         {OpLinear, OpScaledAdd},
}
