package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// The bad-input tests record what each refused command did: the class of
// input, the command line (temporary paths replaced by their roles), golf's
// message, the exit code and what was left on disk. With
// GOLF_RELIABILITY_DOC=docs/reliability.md, `go test ./cmd/golf -run
// 'BadInput|BadEvalInput|InfoRefuses|BadResume'` rewrites that document
// from the runs (scripts/reliability_doc does exactly that), so every row
// is an observation, not a claim.

type reliabilityRow struct {
	group, class, command, message string
	code                           int
	disk                           string
}

var (
	rowsMu sync.Mutex
	rows   []reliabilityRow
)

// recordRefusal notes one refused command. paths maps temporary paths to
// the names shown instead (longest first is handled here); disk says what
// was left on disk.
func recordRefusal(t *testing.T, group, class string, args, env []string, code int, output string, paths map[string]string, disk string) {
	t.Helper()
	if os.Getenv("GOLF_RELIABILITY_DOC") == "" {
		return
	}
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	clean := func(s string) string {
		for _, k := range keys {
			s = strings.ReplaceAll(s, k, paths[k])
		}
		return s
	}
	var cmd []string
	for _, e := range env {
		if !strings.HasPrefix(e, "GOLF_TEST_") {
			cmd = append(cmd, shellQuote(clean(e)))
		}
	}
	cmd = append(cmd, "golf")
	for _, a := range args {
		if a == "…" {
			cmd = append(cmd, a)
			continue
		}
		cmd = append(cmd, shellQuote(clean(a)))
	}
	msg := ""
	lines := strings.Split(output, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "golf: ") {
			msg = strings.TrimPrefix(line, "golf: ")
			for _, more := range lines[i+1:] { // an indented list continues the message
				if !strings.HasPrefix(more, "  ") {
					break
				}
				msg += "; " + strings.TrimSpace(more)
			}
			break
		}
	}
	if msg == "" { // urfave/cli's own parse errors come first, before the usage text
		msg = strings.TrimSpace(lines[0])
	}
	msg = strings.ReplaceAll(clean(msg), os.TempDir()+"/", "$TMP/")
	rowsMu.Lock()
	rows = append(rows, reliabilityRow{group, class, strings.Join(cmd, " "), msg, code, disk})
	rowsMu.Unlock()
}

// describeDir says what a refused command left in dir.
func describeDir(dir string) string {
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			found = append(found, rel)
		}
		return nil
	})
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return "nothing (OUT_DIR not created)"
	}
	if len(found) == 0 {
		return "nothing (OUT_DIR empty)"
	}
	return strings.Join(found, ", ")
}

// writeReliabilityDoc writes the recorded rows as docs/reliability.md.
func writeReliabilityDoc(path string) error {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	order := []string{"train", "info", "eval", "resume"}
	sort.SliceStable(rows, func(i, j int) bool {
		gi, gj := indexOf(order, rows[i].group), indexOf(order, rows[j].group)
		return gi < gj
	})
	var b strings.Builder
	b.WriteString(`# Bad input: what golf does with it

Every row below was produced by running the real command (the test binary
as golf) on the embedded data set or a copy of it broken as the class
says; ` + "`GOLF_RELIABILITY_DOC=docs/reliability.md go test ./cmd/golf -run 'BadInput|BadEvalInput|InfoRefuses|BadResume'`" + `
(or ` + "`scripts/reliability_doc`" + `) regenerates it. The same tests assert each
message, the exit code, a peak memory under 256 MiB for the refusal, and
that nothing was written. $DATA and $TOK are the data set and tokenizer,
$OUT the run's OUT_DIR, $DIR a folder of test files. Every command also had
` + "`--data-path $DATA --tokenizer-path $TOK --out-dir $OUT --backend cpu`" + ` and a tiny
model where the class does not say otherwise; those flags are elided as
` + "`…`" + `.

Beyond these refusals: a shard is validated whole (header, size, every token
id) before the first step; a run stopped by SIGINT/SIGTERM/SIGHUP announces
at once which step it stops after and about how long that takes
(` + "`TestInterruptNotice`" + `), saves its state and artifacts and exits
130/143/129, and a killed run resumes from its last checkpoint, with a
metrics file of whole lines, each step once (` + "`TestSignalsAndKill`" + `);
artifacts are published as one set, so a failed run leaves the previous
complete set; one process at a time writes a run: ` + "`OUT_DIR/RUN_ID.lock`" + `
is an advisory flock, taken once the inputs are checked and before anything
is written, dropped by the kernel when its process dies, so a second
` + "`golf train`" + ` of the same RUN_ID and OUT_DIR (with or without
checkpoints), a ` + "`--resume`" + ` of a live run, or a ` + "`--seeds`" + ` series one of
whose seeds trains elsewhere (a series locks every seed's run before it
writes) is refused at once with the run id and the owner's pid, and a
resume after ` + "`kill -9`" + ` of the owner goes through (` + "`TestTwoRunsOneRunID`" + `,
` + "`TestSeriesAgainstALiveSeedRun`" + `, ` + "`TestResumeWhileAlive`" + `; without flock on
the file system, an exclusively created ` + "`RUN_ID.owner`" + ` file, taken over from
a dead process on this host); ` + "`golf data fetch`" + `
limits every attempt (15 s to connect and send its headers and first byte,
30 s for the whole manifest, 60 s of silence within a body) and retries with
backoff, so a server that never answers fails the fetch after about 2
minutes, and checks sizes and sha256 (` + "`data`" + ` tests).

`)
	group := ""
	for _, r := range rows {
		if r.group != group {
			group = r.group
			title := "golf " + group
			if group == "resume" {
				title = "golf train --resume"
			}
			fmt.Fprintf(&b, "\n## %s\n\n| class | command | message | exit | left on disk |\n|---|---|---|---|---|\n", title)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %d | %s |\n", cell(r.class), strings.ReplaceAll(r.command, "|", `\|`), cell(r.message), r.code, cell(r.disk))
	}
	return atomicfile.WriteFile(path, []byte(b.String()))
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return len(xs)
}

// elide replaces the common prefix of a train command (the subcommand, the
// data, tokenizer, OUT_DIR and backend flags and the tiny model, n
// arguments in all) by "…".
func elide(args []string, n int) []string {
	if len(args) < n {
		return args
	}
	return append([]string{args[0], "…"}, args[n:]...)
}

// describeDirDiff says which files appeared in dir beside those in before.
func describeDirDiff(dir string, before []string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	seen := map[string]bool{}
	for _, b := range before {
		seen[b] = true
	}
	var added []string
	for _, e := range ents {
		if !seen[e.Name()] {
			added = append(added, e.Name())
		}
	}
	if len(added) == 0 {
		return "nothing"
	}
	return strings.Join(added, ", ")
}
