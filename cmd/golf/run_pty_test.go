//go:build linux

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols × 24 and returns its master and
// slave ends.
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("not supported: no /dev/ptmx")
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	setCols(t, m, cols)
	return m, s
}

func setCols(t *testing.T, m *os.File, cols uint16) {
	t.Helper()
	require.NoError(t, unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}))
}

// statusDraws are the status lines of a terminal's output: the text
// between a line start (after \n, \r or the clear-below sequence) and the
// \r that parks the cursor, where it holds "tok/s".
func statusDraws(out string) (draws []string, ends []int) {
	// The clear-below sequence ends a line too (same length, so the
	// offsets stay the output's).
	out = strings.ReplaceAll(out, "\x1b[J", "\n\n\n")
	seg := regexp.MustCompile(`[^\r\n]*tok/s[^\r\n]*\r`)
	for _, m := range seg.FindAllStringIndex(out, -1) {
		draws = append(draws, strings.TrimSuffix(out[m[0]:m[1]], "\r"))
		ends = append(ends, m[1])
	}
	return draws, ends
}

// trainOnPTY starts golf train of run id in dir (a small model, steps of
// a fraction of a second, every step logged) with its output on a new
// pseudo-terminal of 100 columns. out collects what the terminal shows;
// done closes when the child has exited and out holds all of it.
func trainOnPTY(t *testing.T, dir, id string, iterations int) (cmd *exec.Cmd, master *os.File, out *syncBuffer, done chan struct{}) {
	t.Helper()
	dp, tp := smallDataset(t)
	master, slave := openPTY(t, 100)
	cmd = exec.Command(os.Args[0], "train", "--backend", "cpu", "--data-path", dp, "--tokenizer-path", tp,
		"--out-dir", dir, "--run-id", id,
		"--num-layers", "4", "--model-dim", "256", "--num-heads", "4", "--num-kv-heads", "2",
		"--train-seq-len", "256", "--train-batch-tokens", "8192", "--grad-accum-steps", "1", "--max-microbatch-tokens", "4096",
		"--val-batch-size", "4096", "--iterations", strconv.Itoa(iterations), "--warmup-steps", "0", "--train-log-every", "1",
		"--max-wallclock-seconds", "0")
	cmd.Env = append(os.Environ(), "GOLF_TEST_MAIN=1")
	cmd.Stdout, cmd.Stderr = slave, slave
	require.NoError(t, cmd.Start())
	slave.Close() // the child holds it; the master reads EIO once it exits
	out = &syncBuffer{}
	done = make(chan struct{})
	go func() {
		io.Copy(out, master) // ends with EIO when the last slave closes
		close(done)
	}()
	return cmd, master, out, done
}

// TestStatusLineOnAPseudoTerminal runs golf train with its output on a
// real pseudo-terminal, 100 columns wide and then narrowed to 40 while it
// trains: the status line shows the step, the loss, tokens/s and a
// labelled ETA, fits the width it was drawn for (40 after the resize), is
// cleared before the final validation's lines, and never reaches the log.
func TestStatusLineOnAPseudoTerminal(t *testing.T) {
	dir := t.TempDir()
	cmd, master, out, done := trainOnPTY(t, dir, "pty", 16)
	waitLong(t, out, regexp.MustCompile(`tok/s[^\r\n]*\r`))
	waitLong(t, out, regexp.MustCompile(`step:4/16 train_loss:`))
	// The window narrows while the run is stopped, so it is narrowed
	// before the run's next draw whatever the machine's speed.
	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	setCols(t, master, 40)
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	require.NoError(t, cmd.Wait())
	<-done
	screen := out.String()

	draws, ends := statusDraws(screen)
	require.NotEmpty(t, draws, "no status line on the terminal:\n%q", screen)
	wide := regexp.MustCompile(`^step (\d+)/16 \[[=>-]+\] +\d+%  loss (\d+\.\d{4}|-)  (\d+|-) tok/s  ETA (\S+)$`)
	assert.Regexp(t, wide, draws[0], "the status line at 100 columns")
	// The draws before the resize are of the wide form; from the first
	// narrow one on, every draw fits 40 columns (none of the old width
	// comes back).
	firstNarrow := -1
	for i, d := range draws {
		w := utf8.RuneCountInString(d)
		assert.Less(t, w, 100, "a status line wider than the terminal: %q", d)
		if firstNarrow < 0 && w < 40 {
			firstNarrow = i
		}
		if firstNarrow >= 0 {
			assert.Less(t, w, 40, "a status line wider than the narrowed terminal, after a narrow one: %q", d)
			assert.Contains(t, d, "ETA", d)
		}
	}
	require.Positive(t, firstNarrow, "no status line drawn at 40 columns after the resize (or none before it):\n%q", screen)
	assert.Regexp(t, wide, draws[firstNarrow-1], "the draw before the resize is the wide form")

	// Before the final validation's line, the last status line is cleared.
	last := ends[len(ends)-1]
	finalVal := strings.Index(screen, "step:16/16 val_loss:")
	require.Positive(t, finalVal, screen)
	assert.Less(t, last, finalVal, "a status line drawn after the final validation began")
	assert.Contains(t, screen[last:finalVal], "\x1b[J", "the status line is cleared before the final validation")
	assert.Contains(t, screen, "run pty done: 16/16 steps")

	log := readFile(t, dir+"/pty.txt")
	assert.NotContains(t, log, "tok/s ", "the status line reached the log")
	assert.NotContains(t, log, "\x1b", "escape sequences in the log")
}

// TestInterruptOnAPseudoTerminal: Ctrl-C on a terminal (SIGINT during a
// step, with the status line drawn) is answered at once by a line of its
// own above the status line, which the redraws that follow do not erase,
// and the final message comes once.
func TestInterruptOnAPseudoTerminal(t *testing.T) {
	cmd, _, out, done := trainOnPTY(t, t.TempDir(), "ptyint", 40)
	waitLong(t, out, regexp.MustCompile(`step:2/40 train_loss:`))
	waitLong(t, out, regexp.MustCompile(`tok/s[^\r\n]*\r`))
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	<-done
	screen := out.String()
	// The notice is a whole line of the terminal (the line discipline
	// writes \n as \r\n), after which nothing clears back over it: every
	// clear-below comes from the status line's row, below it.
	notice := regexp.MustCompile(`stopping after step (\d+) \(about \d+(\.\d)? s\); Ctrl-C again to stop now without saving this step\r\n`)
	m := notice.FindStringSubmatchIndex(screen)
	require.NotNil(t, m, "no notice line on the terminal:\n%q", screen)
	assert.Len(t, notice.FindAllString(screen, -1), 1, "one notice")
	step := screen[m[2]:m[3]]
	assert.Regexp(t, `step:`+step+`/40 train_loss:`, screen[m[1]:], "the step under way finishes after the notice")
	assert.NotContains(t, screen[m[1]:], "\x1b[A", "a cursor move up could overwrite the notice")
	assert.Equal(t, 1, strings.Count(screen, "interrupted by SIGINT"), "the final message once:\n%q", screen)
	assert.NotContains(t, screen, "stopping at the next safe point", "golf train's own notice replaces main's")
}
