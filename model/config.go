// Package model is the parameter-golf GPT written against the backend
// contract: configuration, parameters, forward, backward and loss.
package model

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// ComputeDType is the one package-level precision switch (MLX's
// COMPUTE_DTYPE): the storage dtype of activations, activation gradients and
// the per-step weight copies fed to matmuls. A Model captures it when built.
var ComputeDType = backend.BF16

// Config is the architecture, with the reference's defaults in Baseline.
type Config struct {
	VocabSize        int     // VOCAB_SIZE
	NumLayers        int     // NUM_LAYERS
	ModelDim         int     // MODEL_DIM
	NumHeads         int     // NUM_HEADS
	NumKVHeads       int     // NUM_KV_HEADS
	MLPMult          int     // MLP_MULT
	LogitSoftcap     float64 // LOGIT_SOFTCAP
	RopeBase         float64 // ROPE_BASE
	QKGainInit       float64 // QK_GAIN_INIT
	TiedEmbedInitStd float64 // TIED_EMBED_INIT_STD
	LogitChunkTokens int     // LOGIT_CHUNK_TOKENS (0: one chunk)
}

// Baseline is the 17,059,912-parameter reference configuration.
func Baseline() Config {
	return Config{
		VocabSize: 1024, NumLayers: 9, ModelDim: 512, NumHeads: 8, NumKVHeads: 4, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5, TiedEmbedInitStd: 0.005,
	}
}

// HeadDim is ModelDim/NumHeads.
func (c Config) HeadDim() int { return c.ModelDim / c.NumHeads }

// KVDim is NumKVHeads·HeadDim.
func (c Config) KVDim() int { return c.NumKVHeads * c.HeadDim() }

// MaxTensorElems bounds the element count of every parameter: the GPU
// kernels take sizes and indices as 32-bit integers (shaders/golf_args.h).
const MaxTensorElems = math.MaxInt32

// MaxParams bounds the parameter count: 2^40 parameters need 16 TiB for
// fp32 masters, gradients and Adam moments, beyond any machine, and byte
// counts of that size stay far inside int64.
const MaxParams = 1 << 40

// Validate reports the first constraint the configuration breaks, naming the
// reference's variable and its value: positive dimensions whose products fit
// MaxTensorElems, divisible head counts, an even head dimension, and finite
// float knobs (as float32 too, the precision the kernels take them in).
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		v    int
	}{
		{"VOCAB_SIZE", c.VocabSize}, {"NUM_LAYERS", c.NumLayers}, {"MODEL_DIM", c.ModelDim},
		{"NUM_HEADS", c.NumHeads}, {"NUM_KV_HEADS", c.NumKVHeads}, {"MLP_MULT", c.MLPMult},
	} {
		if d.v <= 0 || d.v > MaxTensorElems {
			return fmt.Errorf("%s must be positive and at most %d, got %d", d.name, MaxTensorElems, d.v)
		}
	}
	switch {
	case c.ModelDim%c.NumHeads != 0:
		return fmt.Errorf("MODEL_DIM=%d must be divisible by NUM_HEADS=%d", c.ModelDim, c.NumHeads)
	case c.NumHeads%c.NumKVHeads != 0:
		return fmt.Errorf("NUM_HEADS=%d must be divisible by NUM_KV_HEADS=%d", c.NumHeads, c.NumKVHeads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("head_dim=MODEL_DIM/NUM_HEADS=%d must be even for RoPE", c.HeadDim())
	case c.LogitChunkTokens < 0 || c.LogitChunkTokens > MaxTensorElems:
		return fmt.Errorf("LOGIT_CHUNK_TOKENS must be in [0, %d], got %d", MaxTensorElems, c.LogitChunkTokens)
	}
	// The largest parameters: tok_emb (V, C) and mlp.fc (F, C), F = MLP_MULT·C.
	C, V, F := float64(c.ModelDim), float64(c.VocabSize), float64(c.ModelDim)*float64(c.MLPMult)
	if n := C * max(V, F); n > MaxTensorElems {
		return fmt.Errorf("VOCAB_SIZE=%d, MODEL_DIM=%d, MLP_MULT=%d give a weight matrix of %.0f elements, more than %d",
			c.VocabSize, c.ModelDim, c.MLPMult, n, MaxTensorElems)
	}
	// NumParams in float64, so that no count below overflows.
	kv := float64(c.NumKVHeads) * C / float64(c.NumHeads)
	perLayer := 2*C*C + 2*kv*C + float64(c.NumHeads) + 4*C + 2*F*C
	if n := V*C + float64(c.NumLayers/2)*C + float64(c.NumLayers)*perLayer; n > MaxParams {
		return fmt.Errorf("NUM_LAYERS=%d, MODEL_DIM=%d, VOCAB_SIZE=%d, MLP_MULT=%d give %.3g parameters, more than %d",
			c.NumLayers, c.ModelDim, c.VocabSize, c.MLPMult, n, int64(MaxParams))
	}
	for _, f := range []struct {
		name     string
		v        float64
		positive bool // > 0, else >= 0 or any sign
		nonneg   bool
	}{
		{"LOGIT_SOFTCAP", c.LogitSoftcap, true, true},
		{"ROPE_BASE", c.RopeBase, true, true},
		{"QK_GAIN_INIT", c.QKGainInit, false, false},
		{"TIED_EMBED_INIT_STD", c.TiedEmbedInitStd, false, true},
	} {
		v32 := float32(f.v)
		switch {
		case math.IsNaN(f.v) || math.IsInf(float64(v32), 0):
			return fmt.Errorf("%s must be a finite number (as float32), got %g", f.name, f.v)
		case f.positive && v32 <= 0:
			return fmt.Errorf("%s must be positive, got %g", f.name, f.v)
		case f.nonneg && f.v < 0:
			return fmt.Errorf("%s must be >= 0, got %g", f.name, f.v)
		}
	}
	return nil
}

// NumEncoderLayers is NumLayers/2; the rest are decoder layers.
func (c Config) NumEncoderLayers() int { return c.NumLayers / 2 }

// NumSkipWeights is min(encoder, decoder) layers.
func (c Config) NumSkipWeights() int {
	return min(c.NumEncoderLayers(), c.NumLayers-c.NumEncoderLayers())
}

// Param is one trainable tensor: its reference flat name, fp32 master
// weights and fp32 gradient accumulator (same shape).
type Param struct {
	Name string
	W    *backend.Tensor // F32 master
	G    *backend.Tensor // F32 gradient, accumulated by backward ops
	// arena is the model's gradient arena G is a view of (nil for a Param
	// made elsewhere).
	arena *gradArena
}

// gradArena is one F32 tensor holding every gradient of a model, each at
// an offset that is a multiple of gradAlign elements; the gaps stay 0.
type gradArena struct {
	t     *backend.Tensor
	count int // parameters in it
}

// gradAlign is the alignment of each gradient in the arena, in elements
// (256 bytes: any vector load of any backend).
const gradAlign = 64

// GradArena returns the one F32 tensor that holds the gradients of
// params when params are every parameter of one model (its Params), and
// nil otherwise. Zeroing or scaling it is zeroing or scaling each
// gradient (its gaps hold zeros), in one launch; a sum over it equals the
// sum over the gradients only up to the order of the additions.
func GradArena(params []*Param) *backend.Tensor {
	if len(params) == 0 || params[0].arena == nil || params[0].arena.count != len(params) {
		return nil
	}
	a := params[0].arena
	for _, p := range params {
		if p.arena != a {
			return nil
		}
	}
	return a.t
}
