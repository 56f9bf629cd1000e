package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Score is one `NAME val_loss:X val_bpb:Y` line of a log.
type Score struct {
	Name    string
	ValLoss float64 // nats per token
	ValBPB  float64 // bits per byte
}

// TrainPoint is one `step:N/M train_loss:L train_time:Tms` line.
type TrainPoint struct {
	Step        int
	Loss        float64
	TrainTimeMs float64 // -1 when the line has no train_time
}

// ValPoint is one `step:N/M val_loss:L val_bpb:B` line.
type ValPoint struct {
	Step         int
	ValLoss, BPB float64
	TrainTimeMs  float64 // -1 when the line has no train_time
}

// Run is what one training log says about its run. A zero count means the
// log does not say (no log prints a zero-byte artifact or a zero-step run
// that ends with a score).
type Run struct {
	Path   string
	Source string // golf, train_gpt.py, train_gpt_mlx.py, or "?" (from the log's own lines)
	RunID  string

	Seed     int
	SeedFrom string // "log" (a seed:N line), "file name" (seedN / seed_N), or "" when unknown

	Steps        int     // the last step the log reached
	Iterations   int     // the planned steps (the M of step:N/M)
	StepAvgMs    float64 // the last step_avg, else train time / steps
	TrainTimeMs  float64 // the last train_time
	WallclockCap bool    // stopping_early: wallclock_cap

	PeakMemMiB    int64  // peak memory allocated (train_gpt.py)
	ModelBytes    int64  // the compressed model file (int8+zlib or the log's format)
	ModelFormat   string // that format, as in bytes_model_<format>: int8_zlib, int6_lzma, ...
	CodeBytes     int64  // Code size (train_gpt.py)
	ArtifactBytes int64  // code + compressed model: the challenge's 16 MB artifact

	Scores []Score // every NAME val_loss:X val_bpb:Y line, in order
	Score  *Score  // the one the report uses; nil: none (see Problem)

	Train []TrainPoint
	Val   []ValPoint

	// Config is the log's hyperparameter lines (model_params:, iterations:,
	// optimizer:, ...), joined: two runs of the same config and code have
	// equal Config whatever their seeds.
	Config string
	// Settings are the key:value pairs of the Config lines, under
	// train_gpt.py's names (golf's layers: is num_layers, dim: model_dim,
	// heads: num_heads, kv_heads: num_kv_heads, seq_len: train_seq_len).
	Settings map[string]string

	// ValPattern and ValTokens are the validation data of the log's
	// `val_loader:shards pattern=P tokens:N` line ("" and 0 without one);
	// EmbeddedData: golf trained on its embedded sample (a data:embedded
	// line), not on a downloaded data set.
	ValPattern   string
	ValTokens    int64
	EmbeddedData bool
	// Problem says why the run is not in the statistics; empty when it is.
	Problem string
	// Notes are oddities worth a line in the report (a truncated last line,
	// a file name whose seed disagrees with the log's, an error line).
	Notes []string

	isLog bool // at least one line golf knows
}

// Scored reports whether the run counts in the statistics.
func (r *Run) Scored() bool { return r.Score != nil && r.Problem == "" }

// SeedKey is the run's seed as text, or its file name when the seed is unknown.
func (r *Run) SeedKey() string {
	if r.SeedFrom == "" {
		return strings.TrimSuffix(filepath.Base(r.Path), filepath.Ext(r.Path))
	}
	return strconv.Itoa(r.Seed)
}

// configKeys are the first keys of the lines that describe a run's
// configuration in golf's, train_gpt.py's and train_gpt_mlx.py's logs
// (seeds, paths, run ids and devices excluded).
var configKeys = map[string]bool{
	"model_params": true, "world_size": true, "attention_mode": true, "sdp_backends": true,
	"tie_embeddings": true, "train_batch_tokens": true, "iterations": true,
	"mlx_max_microbatch_tokens": true, "max_microbatch_tokens": true, "optimizer": true,
	"compute_dtype": true, "dtypes": true,
}

var (
	seedLine     = regexp.MustCompile(`^seed:\s*(-?\d+)\s*$`)
	scoreLine    = regexp.MustCompile(`^([A-Za-z][\w.+-]*)\s+val_loss:\s*(\S+)\s+val_bpb:\s*(\S+)(?:\s|$)`)
	stepLine     = regexp.MustCompile(`^(?:step:\s*)?(\d+)/(\d+)\s`)
	peakLine     = regexp.MustCompile(`^peak memory allocated:\s*(\d+)\s*MiB`)
	modelLine    = regexp.MustCompile(`^Serialized model (\S+):\s*(\d+) bytes`)
	mlxModelLine = regexp.MustCompile(`^serialized_model_(\w+):\s*(\d+) bytes`)
	codeLine     = regexp.MustCompile(`^Code size:\s*(\d+) bytes`)
	totalLine    = regexp.MustCompile(`^Total submission size (\S+):\s*(\d+) bytes`)
	fileSeed     = regexp.MustCompile(`(?i)seed[_-]?(\d+)`)
	valLoader    = regexp.MustCompile(`^val_loader:shards pattern=(\S+) tokens:(\d+)`)
)

// ReadRun reads the log at path (see ParseLog).
func ReadRun(path, score string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLog(path, data, score), nil
}

// ParseLog reads a training log as golf, train_gpt.py and train_gpt_mlx.py
// write it. Only lines that start with a known key count: train_gpt.py
// copies its own source code into the top of its log, and torchrun and
// other tools add lines of their own. score picks the score line: "" for
// the last `NAME_exact val_loss:X val_bpb:Y` line, else the last line whose
// first word is score. A log that ends in the middle of a line (a killed
// writer) loses that line.
func ParseLog(path string, data []byte, score string) *Run {
	r := &Run{Path: path, Source: "?"}
	if n := len(data); n > 0 && data[n-1] != '\n' {
		cut := bytes.LastIndexByte(data, '\n') + 1
		r.Notes = append(r.Notes, fmt.Sprintf("the last line is incomplete (%q): the file was cut while being written", clip(string(data[cut:]), 40)))
		data = data[:cut]
	}
	var config []string
	var errLine string
	for _, raw := range bytes.Split(data, []byte{'\n'}) {
		line := strings.TrimRight(string(raw), "\r \t")
		if line == "" {
			continue
		}
		key, _, _ := strings.Cut(line, ":")
		switch {
		case strings.HasPrefix(line, "Running Go "), strings.HasPrefix(line, "backend:"):
			r.Source, r.isLog = "golf", true
		case strings.HasPrefix(line, "Running PyTorch"), strings.HasPrefix(line, "world_size:"):
			r.Source = "train_gpt.py"
		case strings.HasPrefix(line, "Running MLX"), strings.HasPrefix(line, "mlx_version:"):
			r.Source = "train_gpt_mlx.py"
		}
		if configKeys[key] {
			config = append(config, line)
			r.isLog = true
		}
		switch {
		case seedLine.MatchString(line):
			r.Seed, _ = strconv.Atoi(seedLine.FindStringSubmatch(line)[1])
			r.SeedFrom, r.isLog = "log", true
		case key == "run_id" && !strings.ContainsAny(line, " \t"):
			r.RunID = strings.TrimPrefix(line, "run_id:")
			// golf and train_gpt_mlx.py log run_id: first; a log that
			// holds several attempts (golf's resumed runs) describes the
			// run by its last attempt's configuration lines.
			config = config[:0]
		case valLoader.MatchString(line):
			m := valLoader.FindStringSubmatch(line)
			r.ValPattern, r.ValTokens = m[1], atoi64(m[2])
		case key == "data" && strings.HasPrefix(line, "data:embedded"):
			r.EmbeddedData = true
		case stepLine.MatchString(line):
			r.stepLine(line)
		case strings.HasPrefix(line, "stopping_early:"):
			f := fields(line)
			r.WallclockCap = strings.Contains(f["stopping_early"], "wallclock_cap")
			if ms, ok := durationMs(f["train_time"]); ok {
				r.TrainTimeMs = ms
			}
			if n, m, ok := stepOf(f["step"]); ok {
				r.Steps, r.Iterations = max(r.Steps, n), m
			}
			r.isLog = true
		case peakLine.MatchString(line):
			r.PeakMemMiB, _ = strconv.ParseInt(peakLine.FindStringSubmatch(line)[1], 10, 64)
		case modelLine.MatchString(line):
			m := modelLine.FindStringSubmatch(line)
			r.ModelFormat, r.ModelBytes = formatName(m[1]), atoi64(m[2])
		case mlxModelLine.MatchString(line):
			m := mlxModelLine.FindStringSubmatch(line)
			r.ModelFormat, r.ModelBytes = formatName(m[1]), atoi64(m[2])
		case codeLine.MatchString(line):
			r.CodeBytes = atoi64(codeLine.FindStringSubmatch(line)[1])
		case totalLine.MatchString(line):
			r.ArtifactBytes = atoi64(totalLine.FindStringSubmatch(line)[2])
		case scoreLine.MatchString(line):
			m := scoreLine.FindStringSubmatch(line)
			loss, err1 := strconv.ParseFloat(m[2], 64)
			bpb, err2 := strconv.ParseFloat(m[3], 64)
			if err1 == nil && err2 == nil {
				r.Scores = append(r.Scores, Score{Name: m[1], ValLoss: loss, ValBPB: bpb})
				r.isLog = true
			}
		case key == "error" || key == "interrupted":
			errLine = line
		case key == "resumed_from":
			r.resumed(line)
			errLine = ""
		}
	}
	r.Config = strings.Join(config, "\n")
	r.Settings = settings(config)
	if r.ArtifactBytes == 0 && r.CodeBytes > 0 && r.ModelBytes > 0 {
		r.ArtifactBytes = r.CodeBytes + r.ModelBytes
	}
	if r.StepAvgMs == 0 && r.Steps > 0 && r.TrainTimeMs > 0 {
		r.StepAvgMs = r.TrainTimeMs / float64(r.Steps)
	}
	r.seedFromName()
	r.pickScore(score, errLine)
	return r
}

// settingNames are golf's (and train_gpt_mlx.py's) names of the settings
// train_gpt.py's log names otherwise.
var settingNames = map[string]string{
	"layers": "num_layers", "dim": "model_dim", "heads": "num_heads",
	"kv_heads": "num_kv_heads", "seq_len": "train_seq_len",
}

// settings are the key:value pairs of the configuration lines, the first
// of each key, under train_gpt.py's names.
func settings(config []string) map[string]string {
	out := map[string]string{}
	for _, line := range config {
		for k, v := range fields(line) {
			if n, ok := settingNames[k]; ok {
				k = n
			}
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	return out
}

// stepLine reads `step:N/M key:value ...` (and `N/M key: value ...`, the
// form of later records' scripts).
func (r *Run) stepLine(line string) {
	m := stepLine.FindStringSubmatch(line)
	step, _ := strconv.Atoi(m[1])
	iters, _ := strconv.Atoi(m[2])
	f := fields(line)
	ms, hasTime := durationMs(f["train_time"])
	if !hasTime {
		ms = -1
	}
	loss, errTrain := strconv.ParseFloat(f["train_loss"], 64)
	vloss, errVal := strconv.ParseFloat(f["val_loss"], 64)
	bpb, errBPB := strconv.ParseFloat(f["val_bpb"], 64)
	switch {
	case errTrain == nil:
		r.Train = append(r.Train, TrainPoint{Step: step, Loss: loss, TrainTimeMs: ms})
	case errVal == nil && errBPB == nil:
		r.Val = append(r.Val, ValPoint{Step: step, ValLoss: vloss, BPB: bpb, TrainTimeMs: ms})
	default:
		return
	}
	r.isLog = true
	r.Steps, r.Iterations = max(r.Steps, step), iters
	if hasTime {
		r.TrainTimeMs = ms
	}
	if avg, ok := durationMs(f["step_avg"]); ok {
		r.StepAvgMs = avg
	}
}

// resumed handles golf's `resumed_from:PATH step:N/M ...`: the run went on
// from its checkpoint at step N, so the curve points after N that the
// interrupted attempt logged are superseded.
func (r *Run) resumed(line string) {
	n, m, ok := stepOf(fields(line)["step"])
	if !ok {
		return
	}
	keepT := r.Train[:0]
	for _, p := range r.Train {
		if p.Step <= n {
			keepT = append(keepT, p)
		}
	}
	keepV := r.Val[:0]
	for _, p := range r.Val {
		if p.Step <= n {
			keepV = append(keepV, p)
		}
	}
	r.Train, r.Val, r.Steps, r.Iterations = keepT, keepV, n, m
	r.WallclockCap = false
	if ms, ok := durationMs(fields(line)["train_time"]); ok {
		r.TrainTimeMs = ms
	}
}

// seedFromName takes the seed from a seedN / seed_N in the file name when
// the log has no seed:N line, and notes a file name that disagrees.
func (r *Run) seedFromName() {
	m := fileSeed.FindStringSubmatch(filepath.Base(r.Path))
	if m == nil {
		return
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return
	}
	switch {
	case r.SeedFrom == "":
		r.Seed, r.SeedFrom = n, "file name"
	case n != r.Seed:
		r.Notes = append(r.Notes, fmt.Sprintf("the file name says seed %d but the log says seed:%d (the log wins)", n, r.Seed))
	}
}

// pickScore chooses the score line and says why there is none.
func (r *Run) pickScore(name, errLine string) {
	for i := len(r.Scores) - 1; i >= 0; i-- {
		s := r.Scores[i]
		if (name == "" && strings.HasSuffix(s.Name, "_exact")) || s.Name == name {
			r.Score = &s
			return
		}
	}
	want := "NAME_exact val_loss:X val_bpb:Y"
	if name != "" {
		want = name + " val_loss:X val_bpb:Y"
	}
	switch {
	case !r.isLog:
		r.Problem = "not a training log (no line golf knows)"
	case len(r.Scores) > 0:
		seen := map[string]bool{}
		var names []string
		for _, s := range r.Scores {
			if !seen[s.Name] {
				seen[s.Name] = true
				names = append(names, s.Name)
			}
		}
		r.Problem = fmt.Sprintf("no %s line; its score lines are %s (pick one with --score NAME)", want, strings.Join(names, ", "))
	case errLine != "":
		r.Problem = fmt.Sprintf("no score line: the run ended at step %d/%d (%s)", r.Steps, r.Iterations, clip(errLine, 100))
	case r.Steps > 0:
		r.Problem = fmt.Sprintf("no score line: the log stops at step %d/%d (killed or unfinished?)", r.Steps, r.Iterations)
	default:
		r.Problem = "no score line: the log stops before training (killed or unfinished?)"
	}
}

// fields splits `a:1 b:2ms c: 3` into {a:1, b:2ms, c:3}; a key whose value
// is the next word (`train_time: 6.6m`) takes that word.
func fields(line string) map[string]string {
	out := map[string]string{}
	w := strings.Fields(line)
	for i := 0; i < len(w); i++ {
		k, v, ok := strings.Cut(w[i], ":")
		if !ok || k == "" {
			continue
		}
		if v == "" && i+1 < len(w) && !strings.Contains(w[i+1], ":") {
			v = w[i+1]
			i++
		}
		if _, dup := out[k]; !dup {
			out[k] = v
		}
	}
	return out
}

// durationMs reads 600109ms, 12.5s, 6.6m or a bare number of milliseconds.
func durationMs(s string) (float64, bool) {
	unit := 1.0
	switch {
	case strings.HasSuffix(s, "ms"):
		s = strings.TrimSuffix(s, "ms")
	case strings.HasSuffix(s, "s"):
		s, unit = strings.TrimSuffix(s, "s"), 1000
	case strings.HasSuffix(s, "m"):
		s, unit = strings.TrimSuffix(s, "m"), 60000
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" {
		return 0, false
	}
	return v * unit, true
}

func stepOf(s string) (n, m int, ok bool) {
	a, b, found := strings.Cut(s, "/")
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	return n, m, found && err1 == nil && err2 == nil
}

// formatName turns int8+zlib or int8_zlib into int8_zlib.
func formatName(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return c
		}
		return '_'
	}, s)
}

func atoi64(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// logExts are the file name endings a RUN folder's logs have: golf and
// train_gpt_mlx.py write OUT_DIR/<run_id>.txt, train_gpt.py logs/<run_id>.txt,
// and records keep train_seedN.log.
var logExts = []string{".txt", ".log"}

// golfReport reports whether path is a report golf wrote (a --seeds
// series writes OUT_DIR/<run_id>_report.txt): its name ends so and its
// first line is the report's own ("runs: N logs, ...").
func golfReport(path string) bool {
	if !strings.HasSuffix(path, "_report.txt") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return reportHeader.MatchString(line)
}

// reportHeader is the first line of golf report's output.
var reportHeader = regexp.MustCompile(`^runs: \d+ logs?, \d+ scored`)

// expand turns RUN arguments (log files or folders of logs) into log
// paths. A folder contributes its *.txt and *.log files, sorted; those that
// hold no line of a training log (requirements.txt) are skipped and named
// in skipped. A path named twice counts once.
func expand(args []string, score string) (runs []*Run, skipped []string, err error) {
	seen := map[string]bool{}
	add := func(path string, fromDir bool) error {
		abs, err := filepath.Abs(path)
		if err == nil && seen[abs] {
			return nil
		}
		seen[abs] = true
		r, err := ReadRun(path, score)
		if err != nil {
			return err
		}
		if fromDir && !r.isLog {
			skipped = append(skipped, path)
			return nil
		}
		runs = append(runs, r)
		return nil
	}
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			if err := add(arg, false); err != nil {
				return nil, nil, err
			}
			continue
		}
		ents, err := os.ReadDir(arg)
		if err != nil {
			return nil, nil, err
		}
		var names []string
		for _, e := range ents {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.Type().IsRegular() && (ext == logExts[0] || ext == logExts[1]) {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		before := len(runs)
		for _, n := range names {
			if golfReport(filepath.Join(arg, n)) {
				continue // golf's own report of the folder (a series writes one)
			}
			if err := add(filepath.Join(arg, n), true); err != nil {
				return nil, nil, err
			}
		}
		if len(runs) == before {
			return nil, nil, fmt.Errorf("%s: no training logs in this folder (looked for *.txt and *.log files with golf's, train_gpt.py's or train_gpt_mlx.py's lines)", arg)
		}
	}
	return runs, skipped, nil
}
