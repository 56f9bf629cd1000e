// Command benchvs times golf's CPU backend against PyTorch on the same
// machine, config and data: golf train and scripts/train_gpt_torch_cpu.py
// (the reference's training step in PyTorch on the CPU) run one after the
// other, alternating which goes first, for several rounds, on the embedded
// dataset, with the same hyperparameters (the reference's environment
// variables), and it prints both tokens per second, their ratio and its
// spread over the rounds:
//
//	go run ./scripts/benchvs                       # small and baseline, fp32 and bf16, 3 rounds
//	go run ./scripts/benchvs -configs small -dtypes fp32 -rounds 5
//
// Tokens per second come from each program's own step log lines
// (step:N/M train_loss:... train_time:Tms): over steps from -skip+1 to
// the last, so the first steps' allocations and warm caches are left out,
// and validation (excluded from train_time by both) does not count. Each
// round runs every (config, dtype) pair for both programs; a machine shared
// with other work makes single rounds noisy, which is why the table gives
// the median of each program, the ratio of the medians, and the lowest and
// highest ratio of one round's pair. The load average before and after
// each run is printed, with the CPU model. PyTorch comes from
// -python (Debian's python3-torch: 1.13), threads from -threads (both
// programs get the same number: GOMAXPROCS for golf, TORCH_THREADS for
// PyTorch).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/golf-ml/golf/data"
)

// config is one model configuration and its timing run.
type config struct {
	name  string
	env   []string // the reference's environment variables
	steps int      // ITERATIONS
}

var configs = map[string]config{
	"small": {"small (4×256, seq 256, 4096 tokens/step)", []string{
		"NUM_LAYERS=4", "MODEL_DIM=256", "NUM_HEADS=4", "NUM_KV_HEADS=2",
		"TRAIN_SEQ_LEN=256", "TRAIN_BATCH_TOKENS=4096", "GRAD_ACCUM_STEPS=1",
	}, 30},
	"baseline": {"baseline (9×512, seq 1024, 8192 tokens/step)", []string{
		"NUM_LAYERS=9", "MODEL_DIM=512", "NUM_HEADS=8", "NUM_KV_HEADS=4",
		"TRAIN_SEQ_LEN=1024", "TRAIN_BATCH_TOKENS=8192", "GRAD_ACCUM_STEPS=1",
	}, 10},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchvs:", err)
		os.Exit(1)
	}
}

func run() error {
	rounds := flag.Int("rounds", 3, "rounds of every (config, dtype) pair, alternating which program goes first")
	cfgList := flag.String("configs", "small,baseline", "comma-separated configs: small, baseline")
	dtList := flag.String("dtypes", "fp32,bf16", "comma-separated compute dtypes: fp32, bf16")
	skip := flag.Int("skip", 3, "leading steps left out of tokens/s")
	steps := flag.Int("steps", 0, "ITERATIONS per run (0: 30 for small, 10 for baseline)")
	python := flag.String("python", "/usr/bin/python3", "Python with PyTorch")
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both programs")
	work := flag.String("dir", "", "working directory for binaries, data and logs (default: a new temporary one)")
	golfBin := flag.String("golf", "", "a golf binary to time (default: go build ./cmd/golf)")
	anyBLAS := flag.Bool("any-blas", false, "time PyTorch even when its float32 products run on the reference BLAS (netlib), many times slower than OpenBLAS")
	flag.Parse()

	var cfgs []config
	for _, name := range strings.Split(*cfgList, ",") {
		c, ok := configs[name]
		if !ok {
			return fmt.Errorf("-configs: unknown config %q (want small or baseline)", name)
		}
		if *steps > 0 {
			c.steps = *steps
		}
		if c.steps <= *skip+1 {
			return fmt.Errorf("-steps %d leaves no steps after -skip %d", c.steps, *skip)
		}
		cfgs = append(cfgs, c)
	}
	dts := strings.Split(*dtList, ",")
	for _, dt := range dts {
		if dt != "fp32" && dt != "bf16" {
			return fmt.Errorf("-dtypes: unknown dtype %q (want fp32 or bf16)", dt)
		}
	}
	if *rounds < 1 || *threads < 1 {
		return errors.New("-rounds and -threads must be at least 1")
	}
	script, err := filepath.Abs("scripts/train_gpt_torch_cpu.py")
	if err != nil {
		return err
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("run benchvs from the repository root: %w", err)
	}
	if out, err := exec.Command(*python, "-c", "import torch; print(torch.__version__)").CombinedOutput(); err != nil {
		return fmt.Errorf("-python %s cannot import torch: %v\n%s", *python, err, out)
	}
	blas, err := torchBLAS(*python)
	if err != nil {
		return err
	}
	if referenceBLAS(blas) && !*anyBLAS {
		return fmt.Errorf("PyTorch's float32 products would run on the reference BLAS (%s), single-threaded and many times slower than OpenBLAS, which would flatter golf: install libopenblas0-pthread (Debian; python3-torch only recommends it), or pass -any-blas to time it anyway", blas)
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "benchvs"); err != nil {
			return err
		}
	}
	golf := *golfBin
	if golf == "" {
		golf = filepath.Join(dir, "golf")
		if out, err := exec.Command("go", "build", "-o", golf, "./cmd/golf").CombinedOutput(); err != nil {
			return fmt.Errorf("building golf: %v\n%s", err, out)
		}
	}
	dataPath, tokPath, err := data.ExtractEmbedded(filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	fmt.Printf("cpu: %s, %d threads for each program; python: %s with %s (fp32), %s (bf16); PyTorch's BLAS: %s\n",
		cpuModel(), *threads, *python, strings.Join(torchEnv(*threads, "fp32"), " "), strings.Join(torchEnv(*threads, "bf16"), " "), blas)
	fmt.Printf("data: %s\n\n", dataPath)

	type key struct{ cfg, dt string }
	results := map[key]*[2][]float64{} // golf, torch tokens/s per round
	for r := range *rounds {
		for _, c := range cfgs {
			for _, dt := range dts {
				env := append(os.Environ(), c.env...)
				env = append(env,
					"DATA_PATH="+dataPath, "TOKENIZER_PATH="+tokPath, "COMPUTE_DTYPE="+dt,
					"ITERATIONS="+strconv.Itoa(c.steps), "WARMUP_STEPS=0", "TRAIN_LOG_EVERY=1",
					"VAL_LOSS_EVERY=0", "VAL_BATCH_SIZE=32768", "MAX_WALLCLOCK_SECONDS=0",
					"OUT_DIR="+filepath.Join(dir, "logs"), "SEED=1337")
				progs := []struct {
					name string
					cmd  *exec.Cmd
				}{
					{"golf", command(env, []string{"GOLF_BACKEND=cpu", "GOMAXPROCS=" + strconv.Itoa(*threads), fmt.Sprintf("RUN_ID=golf_%s_%s_%d", c.name[:4], dt, r)},
						golf, "train")},
					{"torch", command(env, append(torchEnv(*threads, dt), "SKIP_FINAL_EVAL=1", fmt.Sprintf("RUN_ID=torch_%s_%s_%d", c.name[:4], dt, r)),
						*python, script)},
				}
				if r%2 == 1 {
					progs[0], progs[1] = progs[1], progs[0]
				}
				k := key{c.name, dt}
				if results[k] == nil {
					results[k] = new([2][]float64)
				}
				for _, p := range progs {
					before := loadAvg()
					t0 := time.Now()
					tokS, err := timeRun(p.cmd, *skip)
					if err != nil {
						return fmt.Errorf("round %d %s %s %s: %w", r+1, c.name, dt, p.name, err)
					}
					fmt.Printf("round %d  %-44s %-4s %-5s %8.0f tok/s  (%.0fs; load %s → %s)\n",
						r+1, c.name, dt, p.name, tokS, time.Since(t0).Seconds(), before, loadAvg())
					i := 0
					if p.name == "torch" {
						i = 1
					}
					results[k][i] = append(results[k][i], tokS)
				}
			}
		}
	}

	fmt.Printf("\nside by side (%d rounds; tokens/s over steps %d to the last; medians; spread = lowest–highest ratio of one round)\n", *rounds, *skip+1)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "config\tdtype\tgolf tok/s\tPyTorch tok/s\tratio\tspread\tCPU\tload now")
	for _, c := range cfgs {
		for _, dt := range dts {
			res := results[key{c.name, dt}]
			g, t := median(res[0]), median(res[1])
			lo, hi := spread(res[0], res[1])
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.2f×\t%.2f–%.2f×\t%s\t%s\n", c.name, dt, g, t, g/t, lo, hi, cpuModel(), loadAvg())
		}
	}
	return tw.Flush()
}

// torchEnv is PyTorch's thread settings: TORCH_THREADS intra-op threads
// and, unless the caller's environment sets them, OpenBLAS (which Debian's
// torch calls for float32 matrix products) on as many threads and OpenMP's
// idle threads sleeping (OMP_WAIT_POLICY=PASSIVE). With OpenMP's default,
// idle threads spin: in float32 they then take turns with OpenBLAS's own
// threads on the same cores (a 2-thread step of the small config took
// 3.2 s instead of 1.0 s), and on a machine where other work runs they
// take turns with it (a bfloat16 step took 5 s instead of 0.5 s). On an
// idle machine spinning makes PyTorch's bfloat16 step faster (0.35 s
// against 0.47 s measured here): set OMP_WAIT_POLICY=ACTIVE to time that.
func torchEnv(threads int, dt string) []string {
	env := []string{"TORCH_THREADS=" + strconv.Itoa(threads)}
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" && dt == "fp32" {
		env = append(env, "OPENBLAS_NUM_THREADS="+strconv.Itoa(threads))
	}
	if os.Getenv("OMP_WAIT_POLICY") == "" {
		env = append(env, "OMP_WAIT_POLICY=PASSIVE")
	}
	return env
}

// command is name args with env plus extra (later entries win).
func command(env, extra []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(slices.Clone(env), extra...)
	return cmd
}

// stepLine matches a training step's log line of golf and of the reference.
var stepLine = regexp.MustCompile(`^step:(\d+)/\d+ train_loss:\S+ train_time:(\d+(?:\.\d+)?)ms`)

// timeRun runs cmd and returns tokens per second over its steps after
// skip, from its step lines' train_time and TRAIN_BATCH_TOKENS.
func timeRun(cmd *exec.Cmd, skip int) (float64, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v\n%s", err, tail(out.String(), 2000))
	}
	tokens := 0
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "TRAIN_BATCH_TOKENS="); ok {
			tokens, _ = strconv.Atoi(v)
		}
	}
	times := map[int]float64{}
	last := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := stepLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		step, _ := strconv.Atoi(m[1])
		ms, _ := strconv.ParseFloat(m[2], 64)
		times[step] = ms
		last = max(last, step)
	}
	t0, ok0 := times[skip]
	t1, ok1 := times[last]
	if !ok0 || !ok1 || last <= skip || t1 <= t0 {
		return 0, fmt.Errorf("no step lines %d and after in the output:\n%s", skip, tail(out.String(), 2000))
	}
	return float64((last-skip)*tokens) / ((t1 - t0) / 1000), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is the lowest and highest golf/torch ratio of one round.
func spread(g, t []float64) (lo, hi float64) {
	for i := range g {
		r := g[i] / t[i]
		if i == 0 || r < lo {
			lo = r
		}
		if i == 0 || r > hi {
			hi = r
		}
	}
	return lo, hi
}

// cpuModel is /proc/cpuinfo's model name, or GOARCH where there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAvg is the 1-minute load average, or "?" where it cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// torchBLAS returns the BLAS library PyTorch loads for a float32 matrix
// product (Debian's python3-torch links libblas.so.3, whichever
// alternative provides it), from the Python process's own memory map, or
// "unknown" where it cannot tell (no /proc, a BLAS linked statically).
func torchBLAS(python string) (string, error) {
	const probe = `import torch
a = torch.ones(64, 64)
(a @ a).sum().item()
libs = set()
try:
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) >= 6 and "blas" in f[-1].lower():
            libs.add(f[-1])
except OSError:
    pass
print(" ".join(sorted(libs)) or "unknown")`
	out, err := exec.Command(python, "-c", probe).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("-python %s: finding PyTorch's BLAS: %v\n%s", python, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// referenceBLAS reports whether the libraries torchBLAS found are only the
// reference (netlib) BLAS: a libblas.so.3 that is not OpenBLAS's, MKL's or
// BLIS's.
func referenceBLAS(libs string) bool {
	if libs == "unknown" {
		return false
	}
	l := strings.ToLower(libs)
	return !strings.Contains(l, "openblas") && !strings.Contains(l, "mkl") && !strings.Contains(l, "blis")
}
