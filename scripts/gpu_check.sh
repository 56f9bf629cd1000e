#!/usr/bin/env bash
# gpu_check.sh runs the CUDA backend's checks that need an NVIDIA GPU
# (docs/cuda.md, "On a GPU"). The GPU machine has the CUDA 13 libraries,
# PyTorch and sentencepiece, but no Go and no network, so the binaries are
# built here first and travel in the git-ignored folder .gpu/bin:
#
#	scripts/gpu_check.sh build    (with Go) golf, cuda.test and gputest.test, static
#	                              (CGO_ENABLED=0), and a copy of the reference's train_gpt.py
#
# then, on the GPU machine, from the repository root, one section per call
# (each fits in ten minutes):
#
#	scripts/gpu_check.sh info     the device, the driver, PyTorch, the libraries golf finds,
#	                              `golf info --backend cuda`
#	scripts/gpu_check.sh tests    package cuda's tagged tests with CUDA 13's NVRTC and cuBLASLt
#	                              (every kernel × dtype × flavour for sm_80..sm_90, every
#	                              cuBLASLt plan read back), then cuda/gputest with
#	                              GOLF_REQUIRE_GPU=1: backendtest.RunAll in every dtype and
#	                              flavour, the tc attention, two training steps against the CPU,
#	                              the training loop's host waits, the kernel cache
#	scripts/gpu_check.sh smoke    200 steps of the smoke config with --backend cuda and with
#	                              --backend cpu: the final val_bpb within 0.01
#	scripts/gpu_check.sh bench    golf bench --backend cuda, then golf train at the baseline
#	                              config (9×512, seq 1024, 524,288 tokens a step) on
#	                              random-token shards
#	scripts/gpu_check.sh ref      the reference train_gpt.py on one GPU, same shards and steps
#	scripts/gpu_check.sh compare  the two side by side: tokens/s, ms/step, MFU, peak memory
#	scripts/gpu_check.sh nccl     one rank through the whole data-parallel path (the real
#	                              NCCL, --nproc-per-node 1) against the same run without it,
#	                              30 smoke steps in bf16 and fp32: the logs' losses and the
#	                              final exact line identical
#	scripts/gpu_check.sh all      all of them in one call, for a short lease: info, the
#	                              GPU tests, the smoke runs (the CPU's beside the GPU tests),
#	                              golf train and the reference at the baseline, golf bench,
#	                              compare, golf kernels, package cuda's tests; each step cut to what
#	                              GPU_CHECK_DEADLINE leaves
#
# Logs and summary.txt go to .gpu/out/<section>, and packed to $OUT (the
# device tool's output folder) when set. The exit status is non-zero when a check failed.
# Environment: GPU_CHECK_ITERS (steps at the baseline, default 60; compare
# times those after step 20), GPU_CHECK_LOG_EVERY (default 10),
# GPU_CHECK_DEADLINE (seconds for the whole call, 0 = none), GPU_CHECK_STEPS
# (the steps of all, in order: info gputest smoke nccl train ref bench
# compare kernels libtest),
# GPU_CHECK_BENCH_MIN_TIME (golf bench --min-time, default 1s), GPU_CHECK_MICROBATCH
# (golf's MAX_MICROBATCH_TOKENS at the baseline, default 65536: the
# reference's 64 sequences of 1024 per microbatch), GOLF_CUDA_LIB_PATH (if
# golf does not find CUDA's libraries by itself; `info` says).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin="$root/.gpu/bin"
# Logs go to .gpu/out/<section>; under the device tool ($OUT set, at most
# eight files come back) they are packed into $OUT/<section>_logs.tar.gz
# beside a copy of summary.txt when the script exits.
out="$root/.gpu/out/${1:-none}"
iters="${GPU_CHECK_ITERS:-60}"
log_every="${GPU_CHECK_LOG_EVERY:-10}"
bench_min="${GPU_CHECK_BENCH_MIN_TIME:-1s}"
micro="${GPU_CHECK_MICROBATCH:-65536}"
tok="$root/data/embedded/tokenizers/brown_1024_bpe.model"
shards="$root/.gpu/shards"
ref_default=/work/shared/reference/parameter-golf/train_gpt.py
log() { echo "gpu_check: $*" | tee -a "$out/summary.txt"; }

section=${1:-}
case "$section" in
build)
	mkdir -p "$bin"
	printf '*\n' >"$root/.gpu/.gitignore"
	export CGO_ENABLED=0
	go build -tags cuda -trimpath -ldflags='-s -w' -o "$bin/golf" ./cmd/golf
	go test -c -tags cuda -trimpath -ldflags='-s -w' -o "$bin/cuda.test" ./cuda
	go test -c -tags cuda -trimpath -ldflags='-s -w' -o "$bin/gputest.test" ./cuda/gputest
	ref="${REF_TRAIN_GPT:-$ref_default}"
	[ -f "$ref" ] || ref="$root/shared/reference/parameter-golf/train_gpt.py"
	install -m 644 "$ref" "$bin/train_gpt.py"
	git rev-parse HEAD >"$bin/COMMIT"
	du -ch "$bin"/* | tail -n 1
	echo "carry .gpu/bin (the device tool's carry: [\".gpu/bin\"]), then run scripts/gpu_check.sh <section> there"
	exit 0
	;;
info | tests | smoke | nccl | bench | ref | compare | all) ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac

# Caches (the extracted embedded data, the compiled kernels) stay in the
# ignored folder, so that they survive between calls on the same machine.
export XDG_CACHE_HOME="$root/.gpu/cache"
rm -rf "$out"
mkdir -p "$out"
if [ -n "${OUT:-}" ]; then
	trap 'tar -czf "$OUT/${section}_logs.tar.gz" -C "$out" . 2>/dev/null; cp "$out/summary.txt" "$OUT/${section}_summary.txt" 2>/dev/null' EXIT
fi
for f in golf cuda.test gputest.test train_gpt.py; do
	[ -x "$bin/$f" ] || [ -f "$bin/$f" ] || { echo "gpu_check: $bin/$f missing: run scripts/gpu_check.sh build where Go is, and carry .gpu/bin" >&2; exit 1; }
done
log "== $section ($(date -u +%FT%TZ), binaries of commit $(cat "$bin/COMMIT" 2>/dev/null || echo '?'))"
status=0
fail() { log "FAIL: $*"; status=1; }

# The device's name, for the peak FLOP/s of MFU (dense bf16 tensor cores).
gpu_name() { nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1; }
peak_tflops() {
	case "$(gpu_name)" in
	*H100*PCIe*) echo 756 ;;
	*H100* | *H200*) echo 989.4 ;; # GH200 too
	*A100*) echo 312 ;;
	*) echo 0 ;;
	esac
}

# golf searches CUDA's libraries itself (docs/cuda.md); where it misses
# the NVIDIA wheels PyTorch brought, GOLF_CUDA_LIB_PATH is set to their
# directories, and the summary says so (a gap in the search to fix).
if [ -z "${GOLF_CUDA_LIB_PATH:-}" ] && [ "$section" != compare ] && [ "$section" != ref ]; then
	if ! "$bin/golf" info --backend cuda >"$out/golf_info_probe.txt" 2>&1 &&
		grep -qE 'cuda: (NVRTC|cuBLASLt) (not found|too old)' "$out/golf_info_probe.txt"; then
		dirs=$(python3 -c '
import glob, os, site, sys
ds = site.getsitepackages() + [site.getusersitepackages()] + sys.path
print(":".join(sorted({os.path.dirname(p) for d in ds if d and os.path.isdir(d)
      for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", "lib*.so*"))
      if "nvrtc" in p or "cublasLt" in p})))' || true)
		if [ -n "$dirs" ]; then
			export GOLF_CUDA_LIB_PATH="$dirs"
			log "golf did not find CUDA's libraries by itself ($(grep -m1 -E 'cuda: (NVRTC|cuBLASLt)' "$out/golf_info_probe.txt")); GOLF_CUDA_LIB_PATH=$dirs"
		fi
	fi
fi

# deadline_left prints the seconds left before GPU_CHECK_DEADLINE (the
# whole run's budget, from the start; 0 when unset = no deadline).
t_start=$(date +%s)
deadline="${GPU_CHECK_DEADLINE:-0}"
deadline_left() {
	if [ "$deadline" -le 0 ]; then echo 100000; return; fi
	echo $((deadline - ($(date +%s) - t_start)))
}
# limit N CMD...: CMD under timeout, at most N seconds and at most what the
# deadline leaves (less a margin for the steps after it); 124 when cut.
limit() {
	local n=$1
	shift
	local left
	left=$(($(deadline_left) - 15))
	[ "$left" -lt "$n" ] && n=$left
	if [ "$n" -lt 5 ]; then
		log "skipped for lack of time: $*"
		return 124
	fi
	timeout --kill-after=5 "$n" "$@"
}
elapsed() { echo "$(($(date +%s) - t_start)) s"; }
# dmon_start NAME / dmon_stop: the GPU's utilisation each second into
# dmon_NAME.txt while a timed run goes (is it waiting for the host?).
dmon_pid=
dmon_start() {
	nvidia-smi dmon -s u -d 1 -o T >"$out/dmon_$1.txt" 2>&1 &
	dmon_pid=$!
}
dmon_stop() {
	[ -n "$dmon_pid" ] && kill "$dmon_pid" 2>/dev/null
	wait "$dmon_pid" 2>/dev/null
	dmon_pid=
}

do_info() {
	{ nvidia-smi || true; } >"$out/nvidia-smi.txt" 2>&1
	log "device: $(gpu_name); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
	python3 - <<'EOF' 2>&1 | tee -a "$out/summary.txt" || true
import glob, os, site, sys
try:
    import torch
    print("gpu_check: torch %s (CUDA %s), %s" % (torch.__version__, torch.version.cuda,
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no device"))
except Exception as e:
    print("gpu_check: torch: %s" % e)
dirs = site.getsitepackages() + [site.getusersitepackages()] + sys.path
libs = sorted({p for d in dirs if d and os.path.isdir(d)
               for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", "lib*.so*"))
               if any(n in os.path.basename(p) for n in ("nvrtc", "cublasLt"))})
print("gpu_check: NVIDIA wheels' NVRTC and cuBLASLt:" + ("".join("\n  " + p for p in libs) or " none"))
EOF
	if limit 60 "$bin/golf" info --backend cuda --smoke >"$out/golf_info.txt" 2>&1; then
		log "golf info --backend cuda: ok"; grep -E '^(backend|device)' "$out/golf_info.txt" | tee -a "$out/summary.txt"
	else
		fail "golf info --backend cuda (GOLF_CUDA_LIB_PATH=${GOLF_CUDA_LIB_PATH:-unset}):"; tee -a "$out/summary.txt" <"$out/golf_info.txt"
	fi
}

# do_kernels: golf kernels with the machine's NVRTC for Ampere and Hopper,
# every program's log (ptxas's report) kept in nvrtc_logs/.
do_kernels() {
	if limit 120 "$bin/golf" kernels --backend cuda --arch sm_80,sm_90 --no-cache --log-dir "$out/nvrtc_logs" >"$out/golf_kernels.txt" 2>&1; then
		log "golf kernels: $(tail -n 1 "$out/golf_kernels.txt")"
	else
		fail "golf kernels: $(grep -m 3 -E 'spills unknown|error|does not' "$out/golf_kernels.txt" | tr '\n' ' ') $(tail -n 1 "$out/golf_kernels.txt")"
	fi
}

# do_libtest: package cuda's tagged tests with the machine's NVRTC and
# cuBLASLt. They read testdata/ relative to the package.
do_libtest() {
	if (cd cuda && GOLF_REQUIRE_CUDA_LIBS=1 limit 480 "$bin/cuda.test" -test.v -test.timeout=470s) >"$out/cuda_test.txt" 2>&1; then
		log "cuda.test: PASS ($(grep -c '^--- PASS' "$out/cuda_test.txt") passed, $(grep -c -- '--- SKIP' "$out/cuda_test.txt") skipped)"
	else
		fail "cuda.test: $(grep -E '^--- FAIL' "$out/cuda_test.txt" | tr '\n' ' ') $(tail -n 2 "$out/cuda_test.txt" | tr '\n' ' ')"
	fi
}

do_gputest() {
	if (cd cuda/gputest && GOLF_REQUIRE_GPU=1 GOLF_REQUIRE_CUDA_LIBS=1 limit 180 "$bin/gputest.test" -test.v -test.timeout=170s) >"$out/gputest.txt" 2>&1; then
		log "gputest.test: PASS ($(grep -c -- '--- PASS' "$out/gputest.txt") tests and subtests, $(grep -c -- '--- SKIP' "$out/gputest.txt") skipped)"
	else
		fail "gputest.test: $(grep -E -- '--- FAIL' "$out/gputest.txt" | head -n 20 | tr '\n' ' ') $(tail -n 2 "$out/gputest.txt" | tr '\n' ' ')"
	fi
	{ grep -m 1 'kernel programs for' "$out/gputest.txt"; grep -E 'beyond the float32|steps 11-15' "$out/gputest.txt"; } | tee -a "$out/summary.txt" || true
}

# The smoke config (--smoke: 4×256, seq 256, 4096-token steps, no
# wall-clock cap) for 200 steps on the embedded data, on the GPU and on the
# CPU from the same seed.
smoke_run() {
	local be=$1
	if ! limit 300 "$bin/golf" train --smoke --iterations 200 --backend "$be" --run-id "smoke_$be" --out-dir "$root/.gpu/smoke" >"$out/smoke_$be.txt" 2>&1; then
		fail "golf train --smoke --iterations 200 --backend $be: $(tail -n 3 "$out/smoke_$be.txt" | tr '\n' ' ')"
	fi
	grep -E '^step:200/200 val_loss|^final_int8_zlib_roundtrip_exact|^backend_choice' "$out/smoke_$be.txt" | sed "s/^/$be: /" | tee -a "$out/summary.txt" || true
}
smoke_compare() {
	bpb() { sed -n 's/^step:200\/200 val_loss:[^ ]* val_bpb:\([^ ]*\).*/\1/p' "$out/smoke_$1.txt" | tail -n 1; }
	local c p
	c=$(bpb cuda || true)
	p=$(bpb cpu || true)
	if [ -n "$c" ] && [ -n "$p" ]; then
		if python3 -c "import sys; sys.exit(0 if abs($c - $p) <= 0.01 else 1)"; then
			log "smoke: val_bpb cuda $c, cpu $p: within 0.01"
		else
			fail "smoke: val_bpb cuda $c, cpu $p: more than 0.01 apart"
		fi
	else
		fail "smoke: no final val_bpb (cuda '$c', cpu '$p')"
	fi
}

# do_nccl: one rank through NCCL must train bitwise as the plain run (a
# sum over one rank is exact), in bf16 and fp32.
do_nccl() {
	local dt mode
	for dt in bf16 fp32; do
		for mode in plain nccl; do
			local extra=()
			[ "$mode" = plain ] || extra=(--nproc-per-node 1)
			if ! limit 150 "$bin/golf" train --smoke --iterations 30 --train-log-every 1 --dtype "$dt" --backend cuda \
				--run-id "nccl_${dt}_$mode" --out-dir "$root/.gpu/nccl" --overwrite "${extra[@]}" >"$out/nccl_${dt}_$mode.txt" 2>&1; then
				fail "golf train --smoke --dtype $dt ${extra[*]}: $(tail -n 3 "$out/nccl_${dt}_$mode.txt" | tr '\n' ' ')"
				continue 2
			fi
		done
		lines() { grep -E '^step:[0-9]+/30 train_loss:[^ ]+|^final_int8_zlib_roundtrip_exact' "$1" | sed -E 's/ train_time:.*//'; }
		if [ -n "$(lines "$out/nccl_${dt}_plain.txt")" ] && diff <(lines "$out/nccl_${dt}_plain.txt") <(lines "$out/nccl_${dt}_nccl.txt") >"$out/nccl_${dt}.diff"; then
			log "nccl $dt: one rank through NCCL is bitwise the plain run ($(grep -c train_loss "$out/nccl_${dt}_plain.txt") steps, $(grep -m1 -o 'world_size:[0-9]* grad_accum_steps:[0-9]*' "$out/nccl_${dt}_nccl.txt"))"
		else
			fail "nccl $dt: the runs differ (nccl_${dt}.diff)"
		fi
	done
}

make_shards() {
	if [ ! -f "$shards/fineweb_val_000000.bin" ]; then
		python3 scripts/random_shards.py "$shards" --train-shards 2 --train-tokens $((16 << 20)) --val-tokens $(((1 << 20) + 1)) | tee -a "$out/summary.txt"
	fi
}

do_golf_bench() {
	if limit 120 "$bin/golf" bench --backend cuda --min-time "$bench_min" >"$out/golf_bench.txt" 2>&1; then
		log "golf bench --backend cuda:"; grep -E '^(backend|train step|  step|  host)' "$out/golf_bench.txt" | tee -a "$out/summary.txt"
	else
		fail "golf bench --backend cuda: $(tail -n 3 "$out/golf_bench.txt" | tr '\n' ' ')"
	fi
}

# golf train at the baseline config on the random shards; steps logged
# every GPU_CHECK_LOG_EVERY, so a run cut by the deadline still leaves the
# times compare reads.
do_golf_train() {
	dmon_start golf
	if limit 200 "$bin/golf" train --backend cuda --data-path "$shards" --tokenizer-path "$tok" --run-id golf_baseline \
		--out-dir "$root/.gpu/golf_baseline" --iterations "$iters" --train-log-every "$log_every" --val-loss-every 0 \
		--max-wallclock-seconds 0 --max-microbatch-tokens "$micro" --val-batch-size 524288 >"$out/golf_train.txt" 2>&1; then
		grep -E "^step:$iters/$iters train_loss|^peak memory" "$out/golf_train.txt" | sed 's/^/golf: /' | tee -a "$out/summary.txt"
	else
		fail "golf train --backend cuda at the baseline: $(tail -n 3 "$out/golf_train.txt" | tr '\n' ' ')"
	fi
	dmon_stop
}

# The reference on one GPU: grad_accum_steps 8 of 64 sequences, its own
# warm-up (torch.compile) before the timed steps. It writes its log and
# model files where it runs: .gpu/ref.
do_ref() {
	mkdir -p "$root/.gpu/ref" && cp "$bin/train_gpt.py" "$root/.gpu/ref/"
	dmon_start ref
	if (cd "$root/.gpu/ref" && DATA_PATH="$shards" TOKENIZER_PATH="$tok" RUN_ID=ref_baseline ITERATIONS="$iters" \
		TRAIN_LOG_EVERY="$log_every" VAL_LOSS_EVERY=0 MAX_WALLCLOCK_SECONDS=0 PYTHONUNBUFFERED=1 limit 240 python3 train_gpt.py) >"$out/ref_train.txt" 2>&1; then
		grep -E "^step:$iters/$iters train_loss|^peak memory" "$out/ref_train.txt" | sed 's/^/reference: /' | tee -a "$out/summary.txt"
	else
		fail "train_gpt.py: $(tail -n 3 "$out/ref_train.txt" | tr '\n' ' ')"
	fi
	dmon_stop
}

# do_compare: ms/step between the logged step 20 and the last step logged
# (the first steps' one-off costs left out) and over all steps; tokens/s
# of 524,288-token steps; MFU from golf bench's FLOP count of a baseline
# token.
do_compare() {
	python3 - "$out" "$(peak_tflops)" "$(gpu_name)" <<'EOF' | tee -a "$out/summary.txt"
import re, sys
out, peak, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
tokens = 524288
def steps(path):
    t = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"step:(\d+)/\d+ train_loss:\S+ train_time:(\d+)ms", line)
        if m:
            t[int(m.group(1))] = float(m.group(2))
    return t
def peak_mem(path):
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("peak memory"):
            return line.strip()
    return "peak memory: ?"
flops_per_token = None
try:
    for line in open(out + "/golf_bench.txt"):
        m = re.match(r"train step baseline .*: ([\d.]+) tokens/s, ([\d.]+) GFLOP/s", line)
        if m:
            flops_per_token = float(m.group(2)) * 1e9 / float(m.group(1))
except OSError:
    pass
print("device: %s; steps of %d tokens at the baseline config; random-token shards" % (name, tokens))
rows = {}
for who, path in (("golf", out + "/golf_train.txt"), ("reference", out + "/ref_train.txt")):
    try:
        t = steps(path)
    except OSError:
        print("%s: no log" % who)
        continue
    last = max(t) if t else 0
    if 20 not in t or last <= 20:
        print("%s: step 20 and a later step not both logged (logged: %s)" % (who, sorted(t)))
        continue
    ms = (t[last] - t[20]) / (last - 20)
    rows[who] = tokens / ms * 1e3
    mfu = "MFU %.1f%%" % (100 * rows[who] * flops_per_token / (peak * 1e12)) if flops_per_token and peak else "MFU ?"
    print("%-9s %8.1f ms/step (steps 21-%d; %.1f over all) %9.0f tokens/s  %s  %s"
          % (who, ms, last, t[last] / last, rows[who], mfu, peak_mem(path)))
if len(rows) == 2:
    print("golf / reference tokens/s: %.2fx" % (rows["golf"] / rows["reference"]))
EOF
}

# From here a failed step is recorded (fail) and the next one runs.
set +e
case "$section" in
info) do_info ;;
tests)
	do_libtest
	do_gputest
	;;
smoke)
	smoke_run cuda
	smoke_run cpu
	smoke_compare
	;;
nccl) do_nccl ;;
bench)
	make_shards
	do_golf_bench
	do_golf_train
	;;
ref)
	make_shards
	do_ref
	;;
compare) do_compare ;;
all)
	# Everything in one call, each step cut to what GPU_CHECK_DEADLINE
	# leaves, in the order of GPU_CHECK_STEPS (default: most telling first;
	# the CPU's smoke run goes beside the GPU tests, being no timing, and
	# the timings run one at a time).
	steps="${GPU_CHECK_STEPS:-info gputest smoke nccl train ref bench compare kernels libtest}"
	cpu_smoke=
	for step in $steps; do
		case "$step" in
		info) do_info ;;
		gputest)
			if [[ " $steps " == *" smoke "* ]]; then
				GOMAXPROCS=8 nice -n 10 bash -c "$(declare -f log fail limit deadline_left smoke_run); $(declare -p out bin root deadline t_start); smoke_run cpu" &
				cpu_smoke=$!
			fi
			do_gputest
			;;
		smoke)
			[ -n "$cpu_smoke" ] || smoke_run cpu
			smoke_run cuda
			[ -z "$cpu_smoke" ] || wait "$cpu_smoke" || status=1
			smoke_compare
			;;
		train)
			make_shards
			do_golf_train
			;;
		ref)
			make_shards
			do_ref
			;;
		nccl) do_nccl ;;
		bench) do_golf_bench ;;
		compare) do_compare ;;
		kernels) do_kernels ;;
		libtest) do_libtest ;;
		*) fail "GPU_CHECK_STEPS: no step $step" ;;
		esac
		log "$step done at $(elapsed)"
	done
	;;
esac
exit $status
