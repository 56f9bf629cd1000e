package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs golf in this process with args, its Writer and ErrWriter in
// one buffer, and returns what it wrote and its error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), append([]string{"golf"}, args...))
	return out.String(), err
}

// trainHeadings are the flag categories of golf train --help, in order.
var trainHeadings = []string{
	"DATA OPTIONS:", "MODEL OPTIONS:", "OPTIMIZER OPTIONS:", "SCHEDULE OPTIONS:",
	"EVALUATION OPTIONS:", "CHECKPOINTS OPTIONS:", "OUTPUT OPTIONS:", "BACKEND OPTIONS:",
	"DATA PARALLEL OPTIONS:",
}

// flagLine is a flag's line in help: its first name after three spaces.
var flagLine = regexp.MustCompile(`^   --([a-z0-9-]+)`)

// TestHelpTrainCategories renders golf train --help: every line fits 100
// columns, the category headings come in order, and every flag of the
// command is listed once, under one of them.
func TestHelpTrainCategories(t *testing.T) {
	out, err := runCLI(t, "train", "--help")
	require.NoError(t, err)
	widest := 0
	for _, line := range strings.Split(out, "\n") {
		n := utf8.RuneCountInString(line)
		widest = max(widest, n)
		assert.LessOrEqual(t, n, 100, "line wider than 100 columns: %q", line)
	}
	t.Logf("widest line: %d columns", widest)

	last := -1
	for _, h := range trainHeadings {
		i := strings.Index(out, "\n"+h+"\n")
		if assert.GreaterOrEqual(t, i, 0, "heading %s missing:\n%s", h, out) {
			assert.Greater(t, i, last, "heading %s out of order", h)
			last = i
		}
	}

	under := map[string][]string{} // flag → headings it is listed under
	heading := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, "OPTIONS:") || line == "ENVIRONMENT:" {
			heading = line
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil {
			under[m[1]] = append(under[m[1]], heading)
		}
	}
	flags := 0
	for _, f := range trainCommand().Flags {
		name := f.Names()[0]
		flags++
		if assert.Len(t, under[name], 1, "--%s listed %v", name, under[name]) {
			assert.Contains(t, trainHeadings, under[name][0], "--%s is under no category", name)
		}
	}
	assert.GreaterOrEqual(t, flags, 50, "train's flags")
	for flag, want := range map[string]string{
		"data-path": "DATA OPTIONS:", "num-layers": "MODEL OPTIONS:", "matrix-lr": "OPTIMIZER OPTIONS:",
		"iterations": "SCHEDULE OPTIONS:", "val-loss-every": "EVALUATION OPTIONS:",
		"resume": "CHECKPOINTS OPTIONS:", "checkpoint-every": "CHECKPOINTS OPTIONS:", "seeds": "SCHEDULE OPTIONS:",
		"out-dir": "OUTPUT OPTIONS:", "backend": "BACKEND OPTIONS:", "dtype": "BACKEND OPTIONS:",
		"nproc-per-node": "DATA PARALLEL OPTIONS:", "master-port": "DATA PARALLEL OPTIONS:",
	} {
		assert.Equal(t, []string{want}, under[flag], "--%s", flag)
	}

	// A variable that is not the flag's name in capitals is shown; one
	// that is, is left to the ENVIRONMENT section.
	assert.Regexp(t, `(?m)^   --dtype .*\[\$COMPUTE_DTYPE\]$`, out)
	assert.Regexp(t, `(?m)^   --train-seq-len .*\[also \$TRAIN_MAX_SEQ_LEN\]$`, out)
	assert.Regexp(t, `(?m)^   --iterations value +optimizer steps \(default: 20000\)$`, out)
	assert.Contains(t, out, "\nENVIRONMENT:\n")
	assert.Contains(t, out, "--smoke reads none.")
	assert.Contains(t, out, "The DATA PARALLEL flags read none")
}

// TestHelpFitsEveryCommand: golf help and every command's help fit 100
// columns, and golf help COMMAND is golf COMMAND --help.
func TestHelpFitsEveryCommand(t *testing.T) {
	check := func(what, out string) {
		for _, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 100, "%s: %q", what, line)
		}
	}
	out, err := runCLI(t, "help")
	require.NoError(t, err)
	check("golf help", out)
	for _, cmd := range newApp().Commands {
		flagHelp, err := runCLI(t, cmd.Name, "--help")
		require.NoError(t, err, cmd.Name)
		check(cmd.Name+" --help", flagHelp)
		topic, err := runCLI(t, "help", cmd.Name)
		require.NoError(t, err, cmd.Name)
		assert.Contains(t, topic, "golf "+cmd.Name, cmd.Name)
		if cmd.Name != "help" { // golf help --help is golf help, as in urfave/cli
			assert.Equal(t, flagHelp, topic, "golf help %s", cmd.Name)
		}
	}
	fetch, err := runCLI(t, "data", "fetch", "--help")
	require.NoError(t, err)
	check("data fetch --help", fetch)
	topic, err := runCLI(t, "help", "data", "fetch")
	require.NoError(t, err)
	assert.Equal(t, fetch, topic)
	topic, err = runCLI(t, "data", "help", "fetch")
	require.NoError(t, err)
	assert.Equal(t, fetch, topic)
}

// TestHelpCommand: golf help lists the commands; an unknown command, with
// or without help before it, is an error with a suggestion.
func TestHelpCommand(t *testing.T) {
	out, err := runCLI(t, "help")
	require.NoError(t, err)
	assert.Contains(t, out, "COMMANDS:")
	for _, c := range []string{"train", "eval", "info", "data", "bench", "report", "version", "completion"} {
		assert.Regexp(t, `(?m)^   `+c+`\b`, out)
	}
	noArgs, err := runCLI(t)
	require.NoError(t, err)
	assert.Equal(t, out, noArgs, "golf alone shows the help")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tran"}, `no command "tran"; did you mean "train"?`},
		{[]string{"help", "tran"}, `no command "tran"; did you mean "train"?`},
		{[]string{"rpeort"}, `no command "rpeort"; did you mean "report"?`},
		{[]string{"data", "fetc"}, `data: no command "fetc"; did you mean "fetch"?`},
		{[]string{"help", "data", "fetc"}, `data: no command "fetc"; did you mean "fetch"?`},
		{[]string{"xyzzy"}, `no command "xyzzy" (golf help lists the commands)`},
	} {
		out, err := runCLI(t, c.args...)
		if assert.Error(t, err, "%v", c.args) {
			assert.Equal(t, c.want, err.Error(), "%v", c.args)
		}
		assert.Empty(t, out, "%v: nothing but the error", c.args)
	}
}

// TestMainUnknownCommandAndFlag runs the binary: one line on a mistyped
// command or flag, naming it and the closest one, and a non-zero exit.
func TestMainUnknownCommandAndFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tran"}, "golf: no command \"tran\"; did you mean \"train\"?\n"},
		{[]string{"train", "--iteration", "5"},
			"golf: train: no flag --iteration; did you mean --iterations? (golf train --help lists the flags)\n"},
		{[]string{"train", "-iteration", "5"},
			"golf: train: no flag --iteration; did you mean --iterations? (golf train --help lists the flags)\n"},
		{[]string{"data", "fetch", "--retry", "0"},
			"golf: data fetch: no flag --retry; did you mean --retries? (golf data fetch --help lists the flags)\n"},
		{[]string{"train", "--iterations", "many"},
			"golf: train: invalid value \"many\" for flag --iterations: parse error (golf train --help lists the flags)\n"},
		{[]string{"info", "--num-layers"},
			"golf: info: flag needs an argument: --num-layers (golf info --help lists the flags)\n"},
		{[]string{"--verison"}, "golf: no flag --verison; did you mean --version? (golf --help lists the flags)\n"},
	} {
		code, out := golf(t, nil, c.args...)
		assert.NotEqual(t, 0, code, "%v", c.args)
		assert.Equal(t, c.want, out, "%v", c.args)
	}
	// An environment variable that does not parse keeps urfave/cli's
	// message, which names it, and shows no help either.
	code, out := golf(t, []string{"ITERATIONS=1e3x"}, "train")
	assert.Equal(t, 1, code)
	assert.Equal(t, "golf: could not parse \"1e3x\" as int value from environment variable \"ITERATIONS\" for flag iterations: strconv.ParseInt: parsing \"1e3x\": invalid syntax\n", out)
}

// TestVersion: golf version, --version and -v print the main module's
// version from the build info, the VCS revision when recorded, and Go.
func TestVersion(t *testing.T) {
	want := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		want = bi.Main.Version
	}
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		out, err := runCLI(t, args...)
		require.NoError(t, err, "%v", args)
		assert.True(t, strings.HasPrefix(out, "golf version "+want+"\n"), "%v: %q", args, out)
		assert.Contains(t, out, runtime.GOOS+"/"+runtime.GOARCH)
		if first == "" {
			first = out
		}
		assert.Equal(t, first, out, "%v", args)
	}
	code, out := golf(t, nil, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "golf version "), out)
}

func TestVersionText(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/golf-ml/golf", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	assert.Equal(t, "golf version v1.2.3\nrevision 0123456789abcdef0123456789abcdef01234567 (2025-01-02T03:04:05Z), modified\ngo1.99.1 "+platform+"\n",
		versionText(bi, true))
	bi.Settings[3].Value = "false"
	assert.Equal(t, "golf version v1.2.3\nrevision 0123456789abcdef0123456789abcdef01234567 (2025-01-02T03:04:05Z)\ngo1.99.1 "+platform+"\n",
		versionText(bi, true))
	bare := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/golf-ml/golf"}}
	assert.Equal(t, "golf version (devel)\nrevision unknown (built without VCS information)\ngo1.99.1 "+platform+"\n",
		versionText(bare, true))
	assert.Equal(t, "golf version (devel)\nrevision unknown (built without VCS information)\n"+runtime.Version()+" "+platform+"\n",
		versionText(nil, false))
}

func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"kitten", "sitting", 3}, {"tran", "train", 1}, {"ab", "ba", 1}, {"", "abc", 3}, {"β1", "β2", 1}, {"same", "same", 0}} {
		assert.Equal(t, c.d, editDistance(c.a, c.b), "%s %s", c.a, c.b)
	}
	cmds := []string{"train", "eval", "info", "data", "bench", "kernels", "report", "help", "version"}
	for typed, want := range map[string]string{
		"tran": "train", "trian": "train", "evl": "eval", "kernel": "kernels", "verison": "version",
		"xyzzy": "", "t": "", "fetch": "",
	} {
		assert.Equal(t, want, suggest(typed, cmds), typed)
	}
	flags := []string{"iterations", "retries", "smoke", "seed", "seeds", "help"}
	for typed, want := range map[string]string{
		"iteration": "iterations", "retry": "retries", "smok": "smoke", "sede": "seed", "lr": "",
	} {
		assert.Equal(t, want, suggest(typed, flags), typed)
	}
}

// TestCompletion: urfave/cli's bash completion answers golf's commands and
// a command's flags, and golf completion prints the scripts that ask it.
func TestCompletion(t *testing.T) {
	code, out := golf(t, nil, "--generate-bash-completion")
	assert.Equal(t, 0, code, out)
	for _, c := range []string{"train", "eval", "data", "report", "help", "version"} {
		assert.Contains(t, strings.Fields(out), c)
	}
	code, out = golf(t, nil, "train", "--iter", "--generate-bash-completion")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"--iterations"}, strings.Fields(out))

	for _, sh := range []string{"bash", "zsh"} {
		out, err := runCLI(t, "completion", sh)
		require.NoError(t, err)
		assert.Contains(t, out, "--generate-bash-completion", sh)
		assert.Contains(t, out, "golf", sh)
	}
	_, err := runCLI(t, "completion", "tcsh")
	assert.Error(t, err)
}
