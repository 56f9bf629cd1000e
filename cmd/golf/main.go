// Command golf trains the parameter-golf baseline GPT (train_gpt_mlx.py's
// model, optimizer, data format, metrics, log lines and artifacts) on Apple
// Silicon GPUs through Metal, on NVIDIA GPUs through CUDA, or on any CPU.
//
//	golf train [flags]       train (every hyperparameter is a flag and an env var)
//	golf eval [flags] MODEL  val_loss and val_bpb of a saved .npz or .int8.ptz
//	golf info [flags]        backend, precision policy and memory plan
//	golf data fetch          download the FineWeb shards and tokenizer
//	golf bench [flags]       per-op and training-step speed on a backend
//	golf help [COMMAND]      a command's flags, grouped (also COMMAND --help)
//	golf version             module version and VCS revision (also --version)
//
// SIGINT, SIGTERM and SIGHUP stop a command at the next safe point: golf
// train finishes the current step, saves its state and the artifacts of
// the weights so far, says how to resume, and exits 130, 143 or 129. A
// second signal exits at once, removing any file it was writing.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string {
	switch e.sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "signal " + e.sig.String()
}

// quietExit ends the command with code and no message of its own: what
// there was to say was said already (by rank 0 of a data-parallel run).
type quietExit struct{ code int }

func (q quietExit) Error() string { return fmt.Sprintf("exit status %d", q.code) }

// exitCode is the shell's convention for a process ended by the signal.
func (e signalError) exitCode() int { return 128 + int(e.sig) }

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		first := (<-sigs).(syscall.Signal)
		if !announcesStop.Load() { // golf train prints its own notice (train.go)
			fmt.Fprintf(os.Stderr, "golf: %v: stopping at the next safe point (a second signal exits at once)\n", first)
		}
		cancel(signalError{first})
		second := (<-sigs).(syscall.Signal)
		atomicfile.RemoveInFlight()
		fmt.Fprintf(os.Stderr, "golf: %v: exiting now\n", second)
		os.Exit(signalError{second}.exitCode())
	}()
	app := newApp()
	if err := app.RunContext(ctx, os.Args); err != nil {
		var q quietExit
		if !errors.As(err, &q) {
			fmt.Fprintln(os.Stderr, "golf:", err)
		}
		var se signalError
		if errors.As(err, &se) {
			os.Exit(se.exitCode())
		}
		if errors.As(err, &q) {
			os.Exit(q.code)
		}
		var ec interface{ ExitCode() int } // a rank's exit, through the launcher
		if errors.As(err, &ec) && ec.ExitCode() > 0 {
			os.Exit(ec.ExitCode())
		}
		if errors.Is(err, context.Canceled) {
			if se, ok := context.Cause(ctx).(signalError); ok {
				os.Exit(se.exitCode())
			}
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:    "golf",
		Usage:   "train the parameter-golf GPT on Metal, CUDA or the CPU",
		Version: moduleVersion(debug.ReadBuildInfo()),
		Commands: []*cli.Command{
			trainCommand(),
			evalCommand(),
			infoCommand(),
			dataCommand(),
			benchCommand(),
			kernelsCommand(),
			reportCommand(),
			helpCommand(),
			versionCommand(),
			completionCommand(),
		},
		EnableBashCompletion: true,
		// golf with no command shows the help; golf with an unknown one
		// says so (urfave/cli's default takes it for a help topic).
		Action:       noSuchCommand,
		OnUsageError: usageError,
	}
	for _, c := range app.Commands {
		setUpCommand(c)
	}
	return app
}

// setUpCommand gives c and its subcommands golf's usage errors and, for a
// command with categorized flags, the help template that lists them by
// category.
func setUpCommand(c *cli.Command) {
	if c.OnUsageError == nil {
		c.OnUsageError = usageError
	}
	if len(c.Subcommands) > 0 {
		if c.Action == nil {
			c.Action = noSuchCommand
		}
		if findCommand(c.Subcommands, "help") == nil {
			c.Subcommands = append(c.Subcommands, helpCommand())
		}
	}
	categorized := false
	for _, f := range c.Flags {
		categorized = categorized || flagCategory(f) != ""
	}
	if categorized && c.CustomHelpTemplate == "" {
		c.CustomHelpTemplate = categorizedHelpTemplate(c)
	}
	for _, sub := range c.Subcommands {
		setUpCommand(sub)
	}
}

func flagCategory(f cli.Flag) string {
	if cf, ok := f.(cli.CategorizableFlag); ok {
		return cf.GetCategory()
	}
	return ""
}

// helpWidth is the width golf's help is wrapped to.
const helpWidth = 100

// categorizedHelpTemplate is urfave/cli's CommandHelpTemplate with the
// flags under one heading per category, in flagCategories' order (urfave/cli
// sorts them by name), and an ENVIRONMENT section: flagString leaves out a
// categorized flag's variable when it is the flag's name in capitals.
func categorizedHelpTemplate(c *cli.Command) string {
	var b strings.Builder
	b.WriteString(`NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}`)
	known := []string{`""`}
	category := func(cond, heading string) {
		fmt.Fprintf(&b, "{{range .VisibleFlagCategories}}{{if %s}}\n\n%s{{range .Flags}}\n   {{.}}{{end}}{{end}}{{end}}", cond, heading)
	}
	for _, fc := range flagCategories {
		category(fmt.Sprintf("eq .Name %q", fc.name), fc.heading+" OPTIONS:")
		known = append(known, fmt.Sprintf("%q", fc.name))
	}
	// Any other category, under its own name, then the flags without one.
	category("not (eq .Name "+strings.Join(known, " ")+")", "{{.Name}}:")
	category(`eq .Name ""`, "OTHER OPTIONS:")
	var none []string
	parallelFlags := false
	for _, f := range c.Flags {
		if ef, ok := f.(interface{ GetEnvVars() []string }); ok && len(ef.GetEnvVars()) == 0 && flagCategory(f) != "" {
			if flagCategory(f) == catParallel {
				parallelFlags = true
				continue
			}
			none = append(none, "--"+f.Names()[0])
		}
	}
	b.WriteString(`

   --help, -h  show help

ENVIRONMENT:
   Each flag also reads the variable of its name in capitals (--train-seq-len: TRAIN_SEQ_LEN),
   unless [$VAR] names the one it reads; [also $VAR] is a second name.`)
	if len(none) > 0 {
		fmt.Fprintf(&b, " %s reads none.", strings.Join(none, ", "))
	}
	if parallelFlags {
		b.WriteString(`
   The DATA PARALLEL flags read none: a rank that torchrun, Slurm or Open MPI started reads
   theirs (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).`)
	}
	b.WriteString(`
   A flag given on the command line wins over its variable.
`)
	return b.String()
}

// defaultFlagStringer and defaultHelpPrinter are urfave/cli's own.
var (
	defaultFlagStringer = cli.FlagStringer
	defaultHelpPrinter  = cli.HelpPrinter
)

func init() {
	cli.FlagStringer = flagString
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		var buf bytes.Buffer
		defaultHelpPrinter(&buf, templ, data)
		_, _ = io.WriteString(w, wrapHelp(buf.String(), helpWidth))
	}
	cli.VersionPrinter = func(ctx *cli.Context) {
		_, _ = io.WriteString(ctx.App.Writer, versionText(debug.ReadBuildInfo()))
	}
}

// flagString is urfave/cli's flag line, except that a categorized flag's
// environment variables leave out the one that is the flag's name in
// capitals (the help's ENVIRONMENT section says so): [$VAR] is then the
// variable the flag reads instead, [also $VAR] one it reads as well.
func flagString(f cli.Flag) string {
	s := defaultFlagStringer(f)
	ef, ok := f.(interface{ GetEnvVars() []string })
	if !ok || flagCategory(f) == "" || len(ef.GetEnvVars()) == 0 {
		return s
	}
	envs := ef.GetEnvVars()
	hint := " [$" + strings.Join(envs, ", $") + "]"
	if !strings.HasSuffix(s, hint) { // another platform's format
		return s
	}
	s = strings.TrimSuffix(s, hint)
	own := strings.ToUpper(strings.ReplaceAll(f.Names()[0], "-", "_"))
	var others []string
	reads := false
	for _, e := range envs {
		if e == own {
			reads = true
		} else {
			others = append(others, "$"+e)
		}
	}
	switch {
	case len(others) == 0:
	case reads:
		s += " [also " + strings.Join(others, ", ") + "]"
	default:
		s += " [" + strings.Join(others, ", ") + "]"
	}
	return s
}

// wrapHelp folds the lines of help text wider than width at spaces (or,
// in a word too long for a line, after a comma), continuing under the
// line's second column: a flag's or command's description.
func wrapHelp(text string, width int) string {
	lines := strings.Split(text, "\n")
	var out []string
	for _, line := range lines {
		if utf8.RuneCountInString(line) <= width {
			out = append(out, line)
			continue
		}
		r := []rune(line)
		lead := 0
		for lead < len(r) && r[lead] == ' ' {
			lead++
		}
		indent := lead + 4
		for i := lead; i+2 < len(r); i++ {
			if r[i] == ' ' && r[i+1] == ' ' {
				j := i
				for j < len(r) && r[j] == ' ' {
					j++
				}
				if j < width/2 {
					indent = j
				}
				break
			}
		}
		pad := strings.Repeat(" ", indent)
		first := true
		for len(r) > width {
			min := indent // never break inside the first column
			if !first {
				min = indent + 1
			}
			cut := -1
			for i := width; i > min; i-- {
				if r[i] == ' ' {
					cut = i
					break
				}
			}
			skip := 1
			if cut < 0 { // no space: after the last comma that fits, else anywhere
				cut = width
				for i := width - 1; i > min; i-- {
					if r[i] == ',' {
						cut = i + 1
						break
					}
				}
				skip = 0
			}
			out = append(out, strings.TrimRight(string(r[:cut]), " "))
			r = append([]rune(pad), r[cut+skip:]...)
			first = false
		}
		out = append(out, string(r))
	}
	return strings.Join(out, "\n")
}

// helpCommand is golf help [COMMAND [SUBCOMMAND]], the same as
// golf COMMAND [SUBCOMMAND] --help, but an unknown command is an error
// with a suggestion where urfave/cli's says "No help topic".
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or one command's flags",
		ArgsUsage: "[COMMAND]",
		Action: func(ctx *cli.Context) error {
			parent := ctx.Lineage()[1] // the context of the command that holds help
			if ctx.NArg() == 0 {
				if isApp(parent) { // golf help
					return cli.ShowAppHelp(parent)
				}
				return cli.ShowSubcommandHelp(parent)
			}
			cmds := subcommands(parent)
			path := commandPath(parent)
			for i, name := range ctx.Args().Slice() {
				cmd := findCommand(cmds, name)
				if cmd == nil {
					return noCommandError(path, name, cmds)
				}
				path = strings.TrimSpace(path + " " + cmd.Name)
				if cmd.HelpName == "" { // a subcommand of a command not yet run
					cmd.HelpName = ctx.App.HelpName + " " + path
				}
				next := cli.NewContext(ctx.App, nil, parent)
				next.Command = cmd
				if i == ctx.NArg()-1 || len(cmd.Subcommands) == 0 {
					return cmd.Run(next, cmd.Name, "--help")
				}
				parent, cmds = next, cmd.Subcommands
			}
			return nil
		},
	}
}

// isApp reports whether ctx is the app's own context (golf, not a command).
func isApp(ctx *cli.Context) bool { return len(ctx.Lineage()) <= 2 }

// subcommands are the commands below ctx's command.
func subcommands(ctx *cli.Context) []*cli.Command {
	if isApp(ctx) {
		return ctx.App.Commands
	}
	return ctx.Command.Subcommands
}

// commandPath is the command names of ctx below the app: "" for the app,
// "data" for golf data.
func commandPath(ctx *cli.Context) string {
	var names []string
	for _, c := range ctx.Lineage() {
		if c.Command != nil && c.Command.Name != "" && c.App != nil && c.Command.Name != c.App.Name {
			names = append([]string{c.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// noSuchCommand is the action of a command that only holds subcommands:
// without arguments it shows the help, with one it is an unknown command.
func noSuchCommand(ctx *cli.Context) error {
	if ctx.NArg() == 0 {
		if isApp(ctx) {
			return cli.ShowAppHelp(ctx)
		}
		return cli.ShowSubcommandHelp(ctx)
	}
	return noCommandError(commandPath(ctx), ctx.Args().First(), subcommands(ctx))
}

// usageErr is a mistake on the command line: an unknown command or flag,
// a flag without its value or with a malformed one.
type usageErr struct{ msg string }

func (e usageErr) Error() string { return e.msg }

func noCommandError(path, name string, cmds []*cli.Command) error {
	where := "golf"
	if path != "" {
		where += " " + path
	}
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	msg := fmt.Sprintf("no command %q", name)
	if path != "" {
		msg = fmt.Sprintf("%s: no command %q", path, name)
	}
	if s := suggest(name, names); s != "" {
		return usageErr{fmt.Sprintf("%s; did you mean %q?", msg, s)}
	}
	return usageErr{fmt.Sprintf("%s (%s help lists the commands)", msg, where)}
}

// goFlagName finds the flag in the flag package's errors: "-iteration"
// in "flag provided but not defined: -iteration".
var goFlagName = regexp.MustCompile(`(^|[ :])-([A-Za-z0-9][A-Za-z0-9_.-]*)(:|$)`)

// usageError replaces urfave/cli's answer to a bad command line (the
// error, then the whole help, then the error again) by one line: the flag
// as it is written (--name), the closest flag of the command, and where
// the flags are listed. An environment variable that does not parse keeps
// urfave/cli's message, which names it.
func usageError(ctx *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if strings.Contains(msg, "environment variable") {
		return err
	}
	cmd := ctx.Command
	path := commandPath(ctx)
	where := "golf"
	if path != "" {
		where += " " + path
	}
	prefix := ""
	if path != "" {
		prefix = path + ": "
	}
	dashed := func(name string) string {
		if utf8.RuneCountInString(name) == 1 {
			return "-" + name
		}
		return "--" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range cmd.Flags {
			names = append(names, f.Names()...)
		}
		if isApp(ctx) { // the app's own
			for _, f := range ctx.App.Flags {
				names = append(names, f.Names()...)
			}
			names = append(names, "help", "version")
		} else {
			names = append(names, "help")
		}
		msg = fmt.Sprintf("%sno flag %s", prefix, dashed(name))
		if s := suggest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", dashed(s))
		}
		return usageErr{fmt.Sprintf("%s (%s --help lists the flags)", msg, where)}
	}
	msg = goFlagName.ReplaceAllStringFunc(msg, func(m string) string {
		sub := goFlagName.FindStringSubmatch(m)
		return sub[1] + dashed(sub[2]) + sub[3]
	})
	return usageErr{fmt.Sprintf("%s%s (%s --help lists the flags)", prefix, msg, where)}
}

// suggest is the candidate closest to name by edit distance when it is
// close enough to be a likely typo, else "": at most a third of name's
// length apart (at least 1), or half of it when the two share their
// first four letters (retry, retries); name a prefix of it counts as
// close (smok, smoke).
func suggest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(name, c)
		limit := max(1, n/3)
		if n >= 4 && commonPrefix(name, c) >= 4 {
			limit = max(limit, (n+1)/2)
		}
		if n >= 3 && strings.HasPrefix(c, name) {
			d = min(d, limit)
		}
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// commonPrefix is the number of leading runes a and b share.
func commonPrefix(a, b string) int {
	x, y := []rune(a), []rune(b)
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return n
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// moduleVersion is the main module's version from the build info, or
// "(devel)" when there is none.
func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}

// versionText is golf version's answer: the module version, the VCS
// revision, its time and whether the tree was modified (when the build
// recorded them), and the Go toolchain.
func versionText(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "golf version %s\n", moduleVersion(bi, ok))
	var rev, when, modified string
	if ok && bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
		if modified == "true" {
			b.WriteString(", modified")
		}
		b.WriteString("\n")
	} else {
		b.WriteString("revision unknown (built without VCS information)\n")
	}
	goVersion := runtime.Version()
	if ok && bi != nil && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(&b, "%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the module version and VCS revision (also golf --version)",
		Action: func(ctx *cli.Context) error {
			if ctx.NArg() > 0 {
				return usageErr{fmt.Sprintf("version: unexpected argument %q", ctx.Args().First())}
			}
			cli.ShowVersion(ctx)
			return nil
		},
	}
}

// completionScripts are urfave/cli's autocomplete scripts for golf: the
// shell asks golf ... --generate-bash-completion for the candidates.
var completionScripts = map[string]string{
	"bash": `_golf_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _golf_complete golf
`,
	"zsh": `#compdef golf
_golf_complete() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _golf_complete golf
`,
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(golf completion bash)",
		ArgsUsage: "bash|zsh",
		Action: func(ctx *cli.Context) error {
			script, ok := completionScripts[ctx.Args().First()]
			if ctx.NArg() != 1 || !ok {
				return usageErr{"completion: want one shell, bash or zsh"}
			}
			_, err := io.WriteString(ctx.App.Writer, script)
			return err
		},
	}
}
