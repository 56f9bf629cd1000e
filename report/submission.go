package report

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// Meta is who claims the record (--name, --author, --github-id).
type Meta struct {
	Name, Author, GitHubID string
}

// field is one key of a JSON object written in order.
type field struct {
	key   string
	value any
}

// object is a JSON object that keeps its keys in the order given, so
// submission.json lists seeds in run order as the public records do.
type object []field

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// round8 rounds to the 8 decimals the logs print scores with.
func round8(x float64) float64 { return math.Round(x*1e8) / 1e8 }

// Submission is the challenge's submission.json for the report's runs:
// name/author/github_id when given; val_loss and val_bpb (the means, which
// the challenge's README asks for); mean_val_loss, mean_val_bpb,
// val_loss_std and val_bpb_std (n − 1); seeds and seed_results {seed:
// {val_loss, val_bpb, steps, ms_per_step, artifact_bytes}}; p_value,
// t_statistic and welch_df (Welch only) with the test's terms; and, where
// the logs say, artifact_bytes and bytes_total (the largest code +
// compressed model, the challenge's 16 MB artifact), bytes_code and
// bytes_model_<format> (largest). Scores keep the logs' 8 decimals; the
// test's numbers are full precision. When the report has caveats (too few
// seeds, data other than FineWeb's validation split, a configuration not
// the baseline record's) they come first, as "caveats": the file's
// "record" never stands without them.
func (rep *Report) Submission(meta Meta) any {
	var o object
	add := func(k string, v any) { o = append(o, field{k, v}) }
	for _, f := range []field{{"name", meta.Name}, {"author", meta.Author}, {"github_id", meta.GitHubID}} {
		if f.value != "" {
			add(f.key, f.value)
		}
	}
	if len(rep.Caveats) > 0 {
		add("caveats", rep.Caveats)
	}
	s := rep.Runs.Summary
	add("val_loss", round8(s.MeanLoss))
	add("val_bpb", round8(s.MeanBPB))
	add("mean_val_loss", round8(s.MeanLoss))
	add("mean_val_bpb", round8(s.MeanBPB))
	if s.N > 1 {
		add("val_loss_std", round8(s.StdLoss))
		add("val_bpb_std", round8(s.StdBPB))
	}
	var seeds []int
	var results object
	var artifact, code, model int64
	formats := map[string]bool{}
	used := map[string]int{}
	for _, r := range rep.Runs.Scored() {
		if r.SeedFrom != "" {
			seeds = append(seeds, r.Seed)
		}
		key := r.SeedKey()
		if used[key]++; used[key] > 1 {
			key += " (" + r.Path + ")"
		}
		res := object{
			{"val_loss", r.Score.ValLoss},
			{"val_bpb", r.Score.ValBPB},
			{"steps", r.Steps},
			{"ms_per_step", r.StepAvgMs},
		}
		if r.ArtifactBytes > 0 {
			res = append(res, field{"artifact_bytes", r.ArtifactBytes})
		}
		results = append(results, field{key, res})
		artifact, code, model = max(artifact, r.ArtifactBytes), max(code, r.CodeBytes), max(model, r.ModelBytes)
		if r.ModelBytes > 0 {
			formats[r.ModelFormat] = true
		}
	}
	if len(seeds) > 0 {
		add("seeds", seeds)
	}
	add("seed_results", results)
	if t := rep.Test; t != nil {
		add("p_value", t.P)
		add("t_statistic", t.T)
		if t.Kind == "Welch" {
			add("welch_df", t.DF)
		}
		test := object{{"test", t.Kind}, {"metric", t.Metric}}
		if t.Kind == "Welch" {
			test = append(test, field{"against_mean", round8(t.Target)}, field{"against_runs", rep.Baseline.Summary.N})
		} else {
			test = append(test, field{"against", t.Target})
		}
		test = append(test, field{"margin", t.Margin}, field{"alpha", t.Alpha}, field{"record", t.Record})
		add("significance_test", test)
	}
	if artifact > 0 {
		add("artifact_bytes", artifact)
		add("bytes_total", artifact)
	}
	if code > 0 {
		add("bytes_code", code)
	}
	if model > 0 {
		name := "bytes_model"
		if len(formats) == 1 {
			for f := range formats {
				name += "_" + f
			}
		}
		add(name, model)
	}
	return o
}

// WriteJSON writes Submission(meta) to path, indented, atomically.
func (rep *Report) WriteJSON(path string, meta Meta) error {
	data, err := json.MarshalIndent(rep.Submission(meta), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}
