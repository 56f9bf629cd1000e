package report

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MinRecordSeeds is how many seeds a record claim shows: the challenge's
// records give three.
const MinRecordSeeds = 3

// FineWeb's validation split as the challenge's data script
// (data/cached_challenge_fineweb.py) writes it for the baseline's 1024-token
// vocabulary: the folder and its token count, as the records' logs give it
// (val_loader:shards pattern=.../fineweb10B_sp1024/fineweb_val_*.bin
// tokens:62021632).
const (
	fineWebDataset   = "fineweb10B_sp1024"
	fineWebValTokens = 62021632
)

// fineWebFolder matches the folders of FineWeb's data for any of the
// challenge's vocabularies.
var fineWebFolder = regexp.MustCompile(`^fineweb10B_sp\d+$`)

// baselineSetting is one setting of the baseline record's run.
type baselineSetting struct {
	key   string // as train_gpt.py's log names it (Run.Settings)
	value float64
}

// recordBaseline is the configuration of the challenge's baseline record:
// train_gpt.py's defaults (class Hyperparameters). model_params is the
// count for that shape: 1024·512 embedding + 9 blocks of 1,837,064 (q and
// the projection 512·512 each, k and v 512·256 each, the MLP 2·512·1024,
// 2,056 scales and gains) + 4·512 skip weights = 17,059,912, the count the
// records' logs of that shape print.
var recordBaseline = []baselineSetting{
	{"iterations", 20000},
	{"max_wallclock_seconds", 600},
	{"train_batch_tokens", 524288},
	{"train_seq_len", 1024},
	{"model_params", 17059912},
	{"vocab_size", 1024},
	{"num_layers", 9},
	{"model_dim", 512},
	{"num_heads", 8},
	{"num_kv_heads", 4},
}

// caveats are what a reader of a record verdict must know: a group with
// fewer than MinRecordSeeds scored runs, validation data that is not
// FineWeb's validation split, a configuration that is not the baseline
// record's. One line each, naming the group.
func (rep *Report) caveats() []string {
	groups, names := []*Group{rep.Runs}, []string{"runs"}
	if rep.Baseline != nil {
		groups, names = append(groups, rep.Baseline), append(names, "against runs")
	}
	var out []string
	for i, g := range groups {
		scored := g.Scored()
		if n := len(scored); n < MinRecordSeeds {
			out = append(out, fmt.Sprintf("%s: only %d scored run%s (%s); a record claim shows at least %d seeds",
				names[i], n, plural(n), seedList(scored), MinRecordSeeds))
		}
	}
	for _, check := range []func([]*Run) string{dataCaveat, configCaveat} {
		var said []string
		for _, g := range groups {
			said = append(said, check(g.Scored()))
		}
		switch {
		case len(said) == 2 && said[0] != "" && said[0] == said[1]:
			out = append(out, "runs and against runs: "+said[0])
		default:
			for i, c := range said {
				if c != "" {
					out = append(out, names[i]+": "+c)
				}
			}
		}
	}
	return out
}

// dataCaveat says which runs were not validated on FineWeb's validation
// split, and on what they were; "" when all were.
func dataCaveat(runs []*Run) string {
	var other []string
	unknown := 0
	seen := map[string]bool{}
	for _, r := range runs {
		if r.ValPattern == "" {
			unknown++
			continue
		}
		folder := filepath.Base(filepath.Dir(r.ValPattern))
		if !r.EmbeddedData && fineWebFolder.MatchString(folder) && (folder != fineWebDataset || r.ValTokens == fineWebValTokens) {
			continue
		}
		d := fmt.Sprintf("%s, %d tokens", folder, r.ValTokens)
		switch {
		case r.EmbeddedData:
			d = fmt.Sprintf("%s (golf's embedded sample data, %d tokens)", folder, r.ValTokens)
		case folder == fineWebDataset:
			d = fmt.Sprintf("%s with %d tokens (a part of the split)", folder, r.ValTokens)
		}
		if !seen[d] {
			seen[d] = true
			other = append(other, d)
		}
	}
	split := fmt.Sprintf("FineWeb's validation split (%s, %d tokens)", fineWebDataset, fineWebValTokens)
	var parts []string
	if len(other) > 0 {
		parts = append(parts, fmt.Sprintf("validated on %s, not %s", strings.Join(other, "; "), split))
	}
	if unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d log%s name%s no validation data (no val_loader line), so %s not show %s", unknown, plural(unknown), verbS(unknown), doS(unknown), split))
	}
	return strings.Join(parts, "; ")
}

// configCaveat lists the settings in which the runs differ from the
// baseline record's, with the baseline's value; "" when they differ in
// none. Settings a log does not give are not compared; a log that gives
// none of them is said to.
func configCaveat(runs []*Run) string {
	var diffs []string
	silent := 0
	for _, r := range runs {
		given := false
		for _, b := range recordBaseline {
			if _, ok := r.Settings[b.key]; ok {
				given = true
			}
		}
		if !given {
			silent++
		}
	}
	for _, b := range recordBaseline {
		var vals []string
		seen := map[string]bool{}
		for _, r := range runs {
			s, ok := r.Settings[b.key]
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err == nil && v == b.value {
				continue
			}
			if err == nil {
				s = strconv.FormatFloat(v, 'f', -1, 64) // 0.000 is 0
			}
			if !seen[s] {
				seen[s] = true
				vals = append(vals, s)
			}
		}
		if len(vals) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s %s [%s]", b.key, strings.Join(vals, ", "), strconv.FormatFloat(b.value, 'f', -1, 64)))
		}
	}
	var parts []string
	if len(diffs) > 0 {
		parts = append(parts, "configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): "+strings.Join(diffs, ", "))
	}
	if silent > 0 {
		parts = append(parts, fmt.Sprintf("%d log%s give%s no configuration (iterations, batch and sequence length, model shape) to compare with the baseline record's", silent, plural(silent), verbS(silent)))
	}
	return strings.Join(parts, "; ")
}

// seedList is "seeds 1337, 42", "seed 7", or "no seeds".
func seedList(runs []*Run) string {
	if len(runs) == 0 {
		return "no seeds"
	}
	keys := make([]string, len(runs))
	for i, r := range runs {
		keys[i] = r.SeedKey()
	}
	word := "seeds "
	if len(runs) == 1 {
		word = "seed "
	}
	return word + strings.Join(keys, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// verbS is the -s of a verb whose subject counts n.
func verbS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func doS(n int) string {
	if n == 1 {
		return "it does"
	}
	return "they do"
}
