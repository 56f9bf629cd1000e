// Package optim is the optimizer side of training, as in the OPTIMIZERS
// section of train_gpt_mlx.py: the Muon + Adam split, the learning-rate
// schedule, global-norm gradient clipping, and loss scaling for fp16. It is
// written against the backend contract (AdamStep, MuonMomentum,
// NewtonSchulz, Axpy, Scale, Reduce); parameters are model.Param values
// (fp32 master W, fp32 gradient G), and all optimizer state is fp32 on the
// backend, allocated once.
//
// # Parameter groups (Split, Classify)
//
//	tok_emb.weight                                   → Adam, lr = TIED_EMBED_LR·mul
//	blocks.*, 2-D, no control pattern in the name    → Muon, lr = MATRIX_LR·mul
//	skip_weights; blocks.* 1-D or with a control
//	pattern (attn_scale, mlp_scale, resid_mix, q_gain) → Adam, lr = SCALAR_LR·mul
//
// The two Adams are separate instances, each with its own moments and step
// counter. For the baseline (9 layers) Muon trains 54 matrices and the
// scalar Adam 37 tensors.
//
// # Muon
//
// For a matrix parameter p [R,C] with gradient g, at training step s
// (counting from 0):
//
//	t    = min(s/MUON_MOMENTUM_WARMUP_STEPS, 1)
//	μ    = (1 − t)·MUON_MOMENTUM_WARMUP_START + t·MUON_MOMENTUM
//	buf  = μ·buf + g
//	geff = g + μ·buf                              (Nesterov)
//	X    = NS_k(geff)                             (k = MUON_BACKEND_STEPS)
//	p   −= MATRIX_LR·mul·sqrt(max(1, R/C))·X
//
// NS_k is Keller Jordan's quintic Newton–Schulz iteration, in fp32:
//
//	X₀ = geff/(‖geff‖_F + 1e-7), transposed when R > C
//	A = X·Xᵀ;  X ← a·X + (b·A + c·A²)·X,  (a, b, c) = (3.4445, −4.7750, 2.0315)
//
// Each step maps every singular value σ of X through
// φ(σ) = a·σ + b·σ³ + c·σ⁵ and keeps the singular vectors, so NS_k(G)
// approximates the orthogonal polar factor U·Vᵀ of G = U·Σ·Vᵀ; after 5
// steps the singular values lie in about [0.68, 1.13] (for σ/‖G‖_F ≥ 0.01).
//
// # Adam
//
// MLX's Adam with bias correction; the step counter t starts at 1:
//
//	m = β1·m + (1−β1)·g
//	v = β2·v + (1−β2)·g²
//	p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps)
//
// # Learning-rate schedule (LRMul)
//
// A multiplier 1 that decays linearly to 0 over the last WARMDOWN_ITERS
// iterations, or, with a wall-clock cap, over the time the last
// WARMDOWN_ITERS steps are estimated to take:
//
//	iterations:  mul = (ITERATIONS − s)/WARMDOWN_ITERS   in the last WARMDOWN_ITERS steps
//	wall clock:  mul = remaining_ms/(WARMDOWN_ITERS·elapsed_ms/s)   once that is ≤ 1
//
// # Clipping (ClipGradNorm)
//
//	n = sqrt(Σ_params Σ g²);  g *= GRAD_CLIP_NORM/(n + 1e-12)  if n > GRAD_CLIP_NORM > 0
//
// # Loss scaling (GradScaler)
//
// The backward pass is seeded with S/tokens instead of 1/tokens, so every
// gradient is multiplied by S and small values survive fp16 storage
// (whose smallest subnormal is 2^-24); the fp32 parameter gradients are
// multiplied by 1/S before clipping. For fp16 S is dynamic, with
// torch.amp.GradScaler's rules:
//
//	S₀ = 2^16
//	any ±Inf/NaN in the gradients:  skip the step, S ← S/2
//	2000 consecutive finite steps:  S ← 2·S
//
// For bf16 and fp32 S is 1, or a fixed --loss-scale, and nothing is skipped.
package optim
