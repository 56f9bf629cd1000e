// Package model is the parameter-golf GPT written against the backend
// contract: configuration, parameters, forward, backward and loss.
package model

import (
	"fmt"

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

// Validate reports the first constraint the configuration breaks, naming the
// reference's variable.
func (c Config) Validate() error {
	switch {
	case c.VocabSize <= 0:
		return fmt.Errorf("VOCAB_SIZE must be positive, got %d", c.VocabSize)
	case c.NumLayers <= 0:
		return fmt.Errorf("NUM_LAYERS must be positive, got %d", c.NumLayers)
	case c.ModelDim <= 0 || c.NumHeads <= 0 || c.NumKVHeads <= 0 || c.MLPMult <= 0:
		return fmt.Errorf("MODEL_DIM, NUM_HEADS, NUM_KV_HEADS and MLP_MULT must be positive, got %d, %d, %d, %d",
			c.ModelDim, c.NumHeads, c.NumKVHeads, c.MLPMult)
	case c.ModelDim%c.NumHeads != 0:
		return fmt.Errorf("MODEL_DIM=%d must be divisible by NUM_HEADS=%d", c.ModelDim, c.NumHeads)
	case c.NumHeads%c.NumKVHeads != 0:
		return fmt.Errorf("NUM_HEADS=%d must be divisible by NUM_KV_HEADS=%d", c.NumHeads, c.NumKVHeads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("head_dim=MODEL_DIM/NUM_HEADS=%d must be even for RoPE", c.HeadDim())
	case c.LogitSoftcap <= 0:
		return fmt.Errorf("LOGIT_SOFTCAP must be positive, got %g", c.LogitSoftcap)
	case c.RopeBase <= 0:
		return fmt.Errorf("ROPE_BASE must be positive, got %g", c.RopeBase)
	case c.LogitChunkTokens < 0:
		return fmt.Errorf("LOGIT_CHUNK_TOKENS must be >= 0, got %d", c.LogitChunkTokens)
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
}
