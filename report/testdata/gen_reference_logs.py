#!/usr/bin/python3
"""Write logs in the exact formats of the reference scripts, for report's tests.

usage: /usr/bin/python3 report/testdata/gen_reference_logs.py [REFERENCE_DIR]

REFERENCE_DIR holds openai/parameter-golf's train_gpt.py and train_gpt_mlx.py
(MIT; default /work/shared/reference/parameter-golf). Writes, next to this
script:

  reference/train_gpt_torchrun.txt  what logs/<run_id>.txt of a torchrun
      run of train_gpt.py holds, with torchrun's and NCCL's stderr lines
      merged in front (as `torchrun ... > train.txt 2>&1` leaves them): the
      script's own source code (log0(code)), the "=" * 100 banners, then
      every line its log0 calls print, formatted with the script's own
      f-strings (copied below), ending with final_int8_zlib_roundtrip_exact.
  reference/mlx_seed7.txt  logs/<run_id>.txt of train_gpt_mlx.py: its
      source code, then its log lines (val_progress lines included). The
      MLX script logs no seed, so the seed comes from the file name.

The numbers (losses, times, bytes) are made up but shaped like a real run;
the formats are the scripts'. The Go tests check what the parser reads
against the values written here (listed in EXPECT at the bottom of each log's
generator), so a change here means a change in report/parse_test.go.
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REF = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/reference/parameter-golf"


def train_loss(step):
    return 2.05 + 4.9 * math.exp(-step / 900.0)


def torch_log():
    code = open(os.path.join(REF, "train_gpt.py"), encoding="utf-8").read()
    out = []
    log0 = out.append
    # torchrun's and NCCL's stderr, merged into the file by the shell.
    for line in [
        "W0318 14:37:59.159000 871689 site-packages/torch/distributed/run.py:852] ",
        "W0318 14:37:59.159000 871689 site-packages/torch/distributed/run.py:852] *****************************************",
        "W0318 14:37:59.159000 871689 site-packages/torch/distributed/run.py:852] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
        "W0318 14:37:59.159000 871689 site-packages/torch/distributed/run.py:852] *****************************************",
        "[W318 14:38:11.514156940 Utils.hpp:137] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function operator())",
        "NCCL version 2.27.5+cuda12.9",
        "",
        "[2026-03-18 14:38:12] pgut1-0:871784:871848 [5] ibvwrap.c:94 NCCL WARN Call to ibv_open_device failed",
    ]:
        log0(line)
    # main(): log0(code, console=False) and the banners.
    log0(code)
    log0("=" * 100)
    log0("Running Python 3.12.3 (main, Feb  4 2025, 14:48:35) [GCC 13.3.0]")
    log0("Running PyTorch 2.8.0+cu128")
    log0("Wed Mar 18 14:38:10 2026       \n+-----------------------------------------------------------------------------------------+\n| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |\n+-----------------------------------------------------------------------------------------+\n")
    log0("=" * 100)

    class A:  # args
        tokenizer_path = "./data/tokenizers/fineweb_1024_bpe.model"
        val_files = "./data/datasets/fineweb10B_sp1024/fineweb_val_*.bin"
        num_heads, num_kv_heads = 8, 4
        tie_embeddings = True
        head_lr, matrix_lr, scalar_lr = 0.008, 0.04, 0.04
        train_batch_tokens, train_seq_len = 524288, 1024
        iterations, warmup_steps, max_wallclock_seconds = 20000, 20, 600.0
        seed = 1337
    args = A()
    token_lr = 0.05
    log0(f"val_bpb:enabled tokenizer_kind=sentencepiece tokenizer_path={args.tokenizer_path}")
    log0(f"train_loader:dataset:{'fineweb10B_sp1024'} train_shards:{80}")
    log0(f"val_loader:shards pattern={args.val_files} tokens:{62021632}")
    log0(f"model_params:{17059912}")
    log0(f"world_size:{8} grad_accum_steps:{1}")
    log0("sdp_backends:cudnn=False flash=True mem_efficient=False math=False")
    log0(f"attention_mode:gqa num_heads:{args.num_heads} num_kv_heads:{args.num_kv_heads}")
    log0(
        f"tie_embeddings:{args.tie_embeddings} embed_lr:{token_lr} "
        f"head_lr:{0.0} "
        f"matrix_lr:{args.matrix_lr} scalar_lr:{args.scalar_lr}"
    )
    log0(
        f"train_batch_tokens:{args.train_batch_tokens} train_seq_len:{args.train_seq_len} "
        f"iterations:{args.iterations} warmup_steps:{args.warmup_steps} "
        f"max_wallclock_seconds:{args.max_wallclock_seconds:.3f}"
    )
    log0(f"seed:{args.seed}")
    for warmup_step in range(args.warmup_steps):
        log0(f"warmup_step:{warmup_step + 1}/{args.warmup_steps}")
    step_ms = 43.54
    last = 13780  # the wall-clock cap stops the run here

    def val_line(step, training_time_ms):
        val_loss = train_loss(step) + 0.03
        val_bpb = val_loss / math.log(2) * 0.4101
        log0(
            f"step:{step}/{args.iterations} val_loss:{val_loss:.4f} val_bpb:{val_bpb:.4f} "
            f"train_time:{training_time_ms:.0f}ms step_avg:{training_time_ms / max(step, 1):.2f}ms"
        )

    val_line(0, 0.0)
    for step in list(range(1, 11)) + list(range(200, last, 200)):
        approx_training_time_ms = step * step_ms + 1.5
        log0(
            f"step:{step}/{args.iterations} train_loss:{train_loss(step):.4f} "
            f"train_time:{approx_training_time_ms:.0f}ms step_avg:{approx_training_time_ms / step:.2f}ms"
        )
        if step % 1000 == 0:
            val_line(step, step * step_ms)
    training_time_ms = 600038.0
    val_line(last, training_time_ms)
    log0(
        f"stopping_early: wallclock_cap train_time:{training_time_ms:.0f}ms "
        f"step:{last}/{args.iterations}"
    )
    log0(f"peak memory allocated: {10184} MiB reserved: {10200} MiB")
    model_bytes, code_bytes = 67224983, len(code.encode("utf-8"))
    log0(f"Serialized model: {model_bytes} bytes")
    log0(f"Code size: {code_bytes} bytes")
    log0(f"Total submission size: {model_bytes + code_bytes} bytes")
    quant_file_bytes, payload, raw, ratio = 15815847, 17178912, 17224025, 3.91
    log0(
        f"Serialized model int8+zlib: {quant_file_bytes} bytes "
        f"(payload:{payload} raw_torch:{raw} payload_ratio:{ratio:.2f}x)"
    )
    log0(f"Total submission size int8+zlib: {quant_file_bytes + code_bytes} bytes")
    q_val_loss, q_val_bpb = 2.07269931, 1.2243657
    log0(
        f"final_int8_zlib_roundtrip val_loss:{q_val_loss:.4f} val_bpb:{q_val_bpb:.4f} "
        f"eval_time:{1401:.0f}ms"
    )
    log0(f"final_int8_zlib_roundtrip_exact val_loss:{q_val_loss:.8f} val_bpb:{q_val_bpb:.8f}")
    # print(msg, file=f) ends every message with a newline.
    return "".join(m + "\n" for m in out)


def mlx_log():
    code = open(os.path.join(REF, "train_gpt_mlx.py"), encoding="utf-8").read()
    out = []
    log = out.append
    log(code)
    log("=" * 100)
    log("Running Python 3.12.8 (main, Dec  3 2024, 18:42:41) [Clang 16.0.0 (clang-1600.0.26.4)]")
    log("Running MLX 0.29.3")
    log("=" * 100)

    class A:
        run_id = "mlx_seed7"
        train_files = "./data/datasets/fineweb10B_sp1024/fineweb_train_*.bin"
        val_files = "./data/datasets/fineweb10B_sp1024/fineweb_val_*.bin"
        tokenizer_path = "./data/tokenizers/fineweb_1024_bpe.model"
        vocab_size, num_layers, model_dim, num_heads, num_kv_heads = 1024, 9, 512, 8, 4
        train_seq_len, tie_embeddings = 1024, True
        iterations, train_batch_tokens, grad_accum_steps = 200, 8192, 8
        microbatch_tokens, val_batch_size, warmup_steps = 1024, 524288, 20
        max_wallclock_seconds = 0.0
        mlx_max_microbatch_tokens = 8192
        tied_embed_lr, matrix_lr, scalar_lr, muon_momentum, muon_backend_steps = 0.05, 0.04, 0.04, 0.95, 5
        train_log_every = 50
    args = A()
    log(f"run_id:{args.run_id}")
    log(f"mlx_version:{'0.29.3'}")
    log(f"train_loader:shards pattern={args.train_files}")
    log(f"val_loader:shards pattern={args.val_files} tokens:{62021632}")
    log(f"WARNING: train_loader:subset dataset:{'fineweb10B_sp1024'} "
        f"train_shards:{1}/{195} "
        f"new epochs will arrive sooner than the full dataset")
    log(f"tokenizer_path:{args.tokenizer_path}")
    log(
        f"model_params:{17059912} vocab_size:{args.vocab_size} layers:{args.num_layers} "
        f"dim:{args.model_dim} heads:{args.num_heads} kv_heads:{args.num_kv_heads} "
        f"seq_len:{args.train_seq_len} tie_embeddings:{args.tie_embeddings}"
    )
    log(
        f"iterations:{args.iterations} train_batch_tokens:{args.train_batch_tokens} grad_accum_steps:{args.grad_accum_steps} "
        f"microbatch_tokens:{args.microbatch_tokens} microbatch_batch_size:{args.microbatch_tokens // args.train_seq_len} "
        f"val_batch_size:{args.val_batch_size} "
        f"warmup_steps:{args.warmup_steps} max_wallclock_seconds:{args.max_wallclock_seconds:.3f}"
    )
    log(f"mlx_max_microbatch_tokens:{args.mlx_max_microbatch_tokens}")
    log(
        f"optimizer:muon+adam muon_matrix_params:{54} scalar_params:{37} "
        f"embed_lr:{args.tied_embed_lr} "
        f"matrix_lr:{args.matrix_lr} scalar_lr:{args.scalar_lr} "
        f"muon_momentum:{args.muon_momentum} muon_steps:{args.muon_backend_steps}"
    )
    log(f"val_bpb:enabled tokenizer_kind=sentencepiece tokenizer_path={args.tokenizer_path}")
    log(f"compute_dtype:{'mlx.core.bfloat16'} compile:True")
    log(
        f"dtypes tok_emb:{'mlx.core.bfloat16'} "
        f"linear_weight:{'mlx.core.float32'} "
        f"skip_weights:{'mlx.core.float32'}"
    )
    for warmup_step in range(args.warmup_steps):
        if args.warmup_steps <= 20 or (warmup_step + 1) % 10 == 0 or warmup_step + 1 == args.warmup_steps:
            log(f"warmup_step:{warmup_step + 1}/{args.warmup_steps}")
    step_ms = 812.5
    total_batches = 119

    def progress():
        for batch_idx in range(1, total_batches + 1):
            if batch_idx == 1 or batch_idx == total_batches or batch_idx % 25 == 0:
                log(f"val_progress:{batch_idx}/{total_batches}")

    for step in range(0, args.iterations + 1):
        last_step = step == args.iterations
        train_time_ms = step * step_ms
        if step == 0 or last_step:
            progress()
            val_loss = train_loss(step * 5) + 0.9
            val_bpb = val_loss / math.log(2) * 0.4101
            log(
                f"step:{step}/{args.iterations} val_loss:{val_loss:.4f} val_bpb:{val_bpb:.4f} "
                f"train_time:{train_time_ms:.0f}ms step_avg:{train_time_ms / max(step, 1):.2f}ms"
            )
        if last_step:
            break
        s = step + 1
        if s <= 10 or s % args.train_log_every == 0:
            approx = s * step_ms
            log(
                f"step:{s}/{args.iterations} train_loss:{train_loss(s * 5) + 0.9:.4f} "
                f"train_time:{approx:.0f}ms step_avg:{approx / s:.2f}ms tok_s:{args.train_batch_tokens / (step_ms / 1000.0):.0f}"
            )
    log(f"saved_model:logs/{args.run_id}_mlx_model.npz bytes:{68244802}")
    log(
        f"serialized_model_int8_zlib:{15790012} bytes "
        f"(payload:{17178912} raw_pickle:{17196117} payload_ratio:{3.91:.2f}x)"
    )
    progress()
    q_val_loss, q_val_bpb, q_eval_ms = 3.01234567, 1.78123456, 95000.0
    log(f"final_int8_zlib_roundtrip val_loss:{q_val_loss:.4f} val_bpb:{q_val_bpb:.4f} eval_time:{q_eval_ms:.0f}ms")
    log(f"final_int8_zlib_roundtrip_exact val_loss:{q_val_loss:.8f} val_bpb:{q_val_bpb:.8f}")
    return "".join(m + "\n" for m in out)


def main():
    os.makedirs(os.path.join(HERE, "reference"), exist_ok=True)
    for name, text in [("train_gpt_torchrun.txt", torch_log()), ("mlx_seed7.txt", mlx_log())]:
        with open(os.path.join(HERE, "reference", name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
