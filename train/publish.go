package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/golf-ml/golf/internal/atomicfile"
	"github.com/golf-ml/golf/trainstate"
)

// A run's artifacts (raw .npz, int8 container, summary, loss plot) are
// published as one set: each is written into a staging directory under
// OUT_DIR, and only when all of them exist is the set moved into place.
// The staging directory is marked complete (a "complete" file listing the
// names) before the first rename, so a process killed while renaming
// leaves a set that the next start finishes (recoverPublish); a staging
// directory without the mark is a set that never completed and is
// removed. A failed or killed run therefore never leaves a new .npz beside
// an old .int8.ptz: OUT_DIR holds the previous complete set or the new one.

const (
	stagingPrefix = ".publish-"
	completeMark  = "complete"
)

// publisher stages one artifact set of a run.
type publisher struct {
	outDir, runID, dir string
	names              []string // base names staged so far
}

func newPublisher(outDir, runID string) (*publisher, error) {
	dir, err := os.MkdirTemp(outDir, stagingPrefix+runID+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", outDir, err)
	}
	return &publisher{outDir: outDir, runID: runID, dir: dir}, nil
}

// path is where the artifact with suffix (e.g. "_model.npz") is staged.
func (p *publisher) path(suffix string) string {
	name := p.runID + suffix
	p.names = append(p.names, name)
	return filepath.Join(p.dir, name)
}

// final is where the artifact with suffix ends up.
func (p *publisher) final(suffix string) string { return filepath.Join(p.outDir, p.runID+suffix) }

// abort removes the staging directory and everything in it.
func (p *publisher) abort() { os.RemoveAll(p.dir) }

// commit marks the set complete, then moves every staged file into OUT_DIR.
func (p *publisher) commit() error {
	for _, n := range p.names {
		if _, err := os.Stat(filepath.Join(p.dir, n)); err != nil {
			p.abort()
			return fmt.Errorf("publishing artifacts: %w", err)
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(p.dir, completeMark), []byte(strings.Join(p.names, "\n")+"\n")); err != nil {
		p.abort()
		return fmt.Errorf("publishing artifacts: %w", err)
	}
	return finishPublish(p.dir, p.outDir)
}

// finishPublish moves the files listed in a complete staging directory into
// outDir, syncs outDir and removes the staging directory.
func finishPublish(dir, outDir string) error {
	list, err := os.ReadFile(filepath.Join(dir, completeMark))
	if err != nil {
		return fmt.Errorf("publishing artifacts: %w", err)
	}
	for _, n := range strings.Fields(string(list)) {
		if n != filepath.Base(n) {
			return fmt.Errorf("publishing artifacts: %s lists %q", dir, n)
		}
		err := os.Rename(filepath.Join(dir, n), filepath.Join(outDir, n))
		if err != nil && !errors.Is(err, os.ErrNotExist) { // gone: moved before a crash
			return fmt.Errorf("publishing artifacts: %w", err)
		}
	}
	if d, err := os.Open(outDir); err == nil {
		d.Sync()
		d.Close()
	}
	return os.RemoveAll(dir)
}

// recoverPublish tidies what a killed run of runID left in outDir: it
// finishes a set that was complete, removes staging directories that were
// not, and removes the temporary files of interrupted atomic writes. It
// returns a line per action for the log.
func recoverPublish(outDir, runID string) ([]string, error) {
	var notes []string
	ents, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", outDir, err)
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagingPrefix+runID+".tmp-") {
			continue
		}
		dir := filepath.Join(outDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, completeMark)); err == nil {
			if err := finishPublish(dir, outDir); err != nil {
				return notes, err
			}
			notes = append(notes, "finished publishing the artifacts staged in "+dir)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return notes, fmt.Errorf("OUT_DIR %s: %w", outDir, err)
		}
		notes = append(notes, "removed the incomplete artifact set "+dir)
	}
	for _, c := range []struct{ dir, prefix string }{
		{outDir, runID + "_"}, // artifacts written outside a staging directory by older versions
		{outDir, runID + ".metrics.jsonl"},
		{trainstate.Dir(outDir, runID), "step_"},
	} {
		removed, err := atomicfile.CleanTemps(c.dir, c.prefix)
		if err != nil {
			return notes, fmt.Errorf("OUT_DIR %s: %w", outDir, err)
		}
		for _, r := range removed {
			notes = append(notes, "removed the partial file "+r)
		}
	}
	return notes, nil
}
