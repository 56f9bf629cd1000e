package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cpu"
)

// fakeTerm is a console that says it is a terminal of a given width. It
// records each write with the width the writer last asked for, so a test
// can replay the bytes into a terminal model resized at those points.
type fakeTerm struct {
	mu     sync.Mutex
	width  int
	asked  int
	chunks []termChunk
}

type termChunk struct {
	width int
	data  string
}

func (f *fakeTerm) Width() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = f.width
	return f.width
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.asked
	if w == 0 {
		w = f.width
	}
	f.chunks = append(f.chunks, termChunk{w, string(p)})
	return len(p), nil
}

func (f *fakeTerm) resize(w int) {
	f.mu.Lock()
	f.width = w
	f.mu.Unlock()
}

func (f *fakeTerm) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, c := range f.chunks {
		b.WriteString(c.data)
	}
	return b.String()
}

// screen replays the recorded writes into a model of a terminal and
// returns its rows (the last one is where the cursor is).
func (f *fakeTerm) screen(t *testing.T, reflow bool) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	v := &vt{reflow: reflow}
	for _, c := range f.chunks {
		v.resize(c.width)
		v.feed(t, c.data)
	}
	return v.rows()
}

// vt is a small terminal model: logical lines and a cursor (line, offset
// in the line). A reflowing terminal (most modern ones) keeps the lines
// and rewraps them at a new width, the cursor at the same offset; a
// non-reflowing one cuts every line at the narrower width. It knows
// printable ASCII, CR, LF (as a TTY's output processing makes it: CR LF),
// ESC[J and ESC[K; anything else fails the test.
type vt struct {
	reflow     bool
	width      int
	lines      []string
	line, col  int
	configured bool
}

func (v *vt) resize(w int) {
	if v.configured && w < v.width && !v.reflow {
		for i, l := range v.lines {
			if len(l) > w {
				v.lines[i] = l[:w]
			}
		}
		v.col = min(v.col, w-1)
	}
	v.width, v.configured = w, true
}

func (v *vt) cur() string {
	for len(v.lines) <= v.line {
		v.lines = append(v.lines, "")
	}
	return v.lines[v.line]
}

func (v *vt) feed(t *testing.T, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r':
			v.col = v.col / v.width * v.width
		case c == '\n':
			v.cur()
			v.line++
			v.col = 0
			v.cur()
		case c == 0x1b:
			j := i + 1
			require.True(t, j < len(s) && s[j] == '[', "escape without [ in %q", s)
			k := j + 1
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == ';') {
				k++
			}
			require.Less(t, k, len(s), "unterminated escape in %q", s)
			switch seq := s[j+1 : k+1]; seq {
			case "J": // erase from the cursor to the end of the screen
				l := v.cur()
				if v.col < len(l) {
					v.lines[v.line] = l[:v.col]
				}
				v.lines = v.lines[:v.line+1]
			case "K": // erase to the end of the row
				l := v.cur()
				end := min((v.col/v.width+1)*v.width, len(l))
				if v.col < end {
					v.lines[v.line] = l[:v.col] + strings.Repeat(" ", end-v.col) + l[end:]
				}
			default:
				require.Failf(t, "unknown escape", "ESC[%s in %q", seq, s)
			}
			i = k
		case c >= 0x20 && c < 0x7f:
			l := v.cur()
			if v.col < len(l) {
				l = l[:v.col] + string(c) + l[v.col+1:]
			} else {
				l += strings.Repeat(" ", v.col-len(l)) + string(c)
			}
			v.lines[v.line] = l
			v.col++
			if !v.reflow && v.col >= v.width { // a cut terminal keeps the cursor in its last column
				v.col = v.width - 1
			}
		default:
			require.Failf(t, "unexpected byte", "%q in %q", c, s)
		}
	}
}

// rows are the screen's rows at the current width, trailing spaces cut.
func (v *vt) rows() []string {
	var out []string
	for _, l := range v.lines {
		if l == "" {
			out = append(out, "")
			continue
		}
		for i := 0; i < len(l); i += v.width {
			out = append(out, strings.TrimRight(l[i:min(i+v.width, len(l))], " "))
		}
	}
	return out
}

func countContaining(rows []string, sub string) int {
	n := 0
	for _, r := range rows {
		if strings.Contains(r, sub) {
			n++
		}
	}
	return n
}

// TestStatusLineFields: at any width the status line holds the step, the
// latest train loss, tokens/s and a labelled ETA, in fewer columns than
// the terminal has.
func TestStatusLineFields(t *testing.T) {
	p := Progress{Step: 6, Total: 30, Loss: 5.123456, TokS: 11873, ETA: 69 * time.Second}
	now := time.Now()
	p.At = now
	for _, w := range []int{160, 100, 80, 60, 48, 40} {
		line := statusLine(p, w, now)
		assert.Less(t, len(line), w, "width %d: %q", w, line)
		assert.Contains(t, line, "6/30", "width %d: the step", w)
		assert.Regexp(t, `5\.12`, line, "width %d: the loss", w)
		assert.Regexp(t, `(11873|11\.9k) tok/s`, line, "width %d: tokens/s", w)
		assert.Contains(t, line, "ETA 1m09s", "width %d: a labelled ETA", w)
	}
	// The ETA counts down from when it was estimated.
	assert.Contains(t, statusLine(p, 80, now.Add(10*time.Second)), "ETA 59s")
	// Before anything is known.
	line := statusLine(Progress{Step: 0, Total: 30, Loss: math.NaN(), ETA: -1}, 80, now)
	assert.Contains(t, line, "0/30")
	assert.Contains(t, line, "ETA -")
	// Very narrow terminals still get a line that fits.
	for _, w := range []int{20, 10, 2} {
		assert.Less(t, len(statusLine(p, w, now)), w)
	}
}

// TestStatusETAAfterResume: a run resumed at step 20 of 40 that took 7 s
// for its own 5 steps has 15 steps left at 1.4 s each: 21 s, not the
// 4.2 s that dividing this process's time by all 25 steps done gives.
func TestStatusETAAfterResume(t *testing.T) {
	ft := &fakeTerm{width: 120}
	lg, err := newLogger(os.DevNull, ft, false)
	require.NoError(t, err)
	defer lg.Close()
	cfg := Defaults()
	cfg.Iterations, cfg.TrainBatchTokens = 40, 1000
	r := &runner{cfg: cfg, lg: lg, start: time.Now(), stopAfter: -1, lastLoss: 4.5,
		step: 25, loopStep: 20, loopTimeMs: 50_000, trainTimeMs: 57_000, t0: time.Now()}
	lg.StartBar(cfg.Iterations)
	r.showProgress()
	lg.mu.Lock()
	p := *lg.status
	lg.mu.Unlock()
	assert.InDelta(t, 21.0, p.ETA.Seconds(), 0.05, "ETA")
	assert.InDelta(t, 5000.0/7, p.TokS, 1, "tokens/s of this process")
	line := statusLine(p, 120, p.At)
	assert.Contains(t, line, "ETA 21s")
	assert.Contains(t, line, "25/40")

	// With a wall-clock cap, the ETA is at most the cap's time left.
	r.cfg.MaxWallclockSeconds = 60
	r.showProgress()
	lg.mu.Lock()
	p = *lg.status
	lg.mu.Unlock()
	assert.InDelta(t, 3.0, p.ETA.Seconds(), 0.05, "ETA under a 60 s cap after 57 s of training")
}

// TestStatusLineResize: a status line drawn on a 160-column terminal,
// then on the same terminal narrowed to 40, leaves no stale row, whether
// the terminal reflows its lines or cuts them; log lines go above it, and
// removing it leaves the log lines alone.
func TestStatusLineResize(t *testing.T) {
	for _, reflow := range []bool{true, false} {
		t.Run(fmt.Sprintf("reflow=%v", reflow), func(t *testing.T) {
			ft := &fakeTerm{width: 160}
			lg, err := newLogger(os.DevNull, ft, false)
			require.NoError(t, err)
			defer lg.Close()
			lg.StartBar(30)
			p := Progress{Step: 6, Total: 30, Loss: 5.1234, TokS: 11873, ETA: 69 * time.Second, At: time.Now()}
			lg.SetProgress(p)
			lg.Log("step:6/30 train_loss:5.1234")
			rows := ft.screen(t, reflow)
			require.Len(t, rows, 2, "%q", rows)
			assert.Equal(t, "step:6/30 train_loss:5.1234", rows[0])
			assert.Contains(t, rows[1], "tok/s")
			assert.Greater(t, len(rows[1]), 40, "the wide line uses the room it has: %q", rows[1])

			ft.resize(40)
			p.Step = 7
			lg.SetProgress(p)
			rows = ft.screen(t, reflow)
			require.Len(t, rows, 2, "one log row and one status row after narrowing: %q", rows)
			assert.Equal(t, "step:6/30 train_loss:5.1234", rows[0])
			assert.Less(t, len(rows[1]), 40)
			assert.Contains(t, rows[1], "7/30")
			assert.Contains(t, rows[1], "ETA")
			assert.Equal(t, 1, countContaining(rows, "tok/s"), "no stale status row: %q", rows)

			lg.StopBar()
			lg.Log("after")
			rows = ft.screen(t, reflow)
			assert.Equal(t, []string{"step:6/30 train_loss:5.1234", "after", ""}, rows)
		})
	}
}

// TestRunStatusLineOnTerminal: a run on a terminal shows the status line
// while it trains, takes it away before the final validation (whose
// lines come after the last status line drawn), and leaves a screen of
// log lines only.
func TestRunStatusLineOnTerminal(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Iterations = 6
	cfg.TrainLogEvery = 1
	ft := &fakeTerm{width: 100}
	res, err := Run(context.Background(), cfg, cpu.New(), ft)
	require.NoError(t, err)
	out := ft.output()
	assert.Regexp(t, `step [0-6]/6 \[[=-]+\] +\d+%  loss (\d+\.\d{4}|-)  (\d+|-) tok/s  ETA (\d+s|-)`, out, "a status line while training")
	finalVal := regexp.MustCompile(`step:6/6 val_loss:`).FindStringIndex(out)
	require.NotNil(t, finalVal, out)
	assert.NotContains(t, out[finalVal[0]:], "tok/s", "a status line drawn after the final validation began")
	rows := ft.screen(t, true)
	assert.Zero(t, countContaining(rows, "tok/s"), "a status line left on the screen: %q", rows)
	log, err := os.ReadFile(res.LogPath)
	require.NoError(t, err)
	for _, prefix := range []string{"step:1/6 train_loss:", "step:6/6 train_loss:", "step:6/6 val_loss:", "final_int8_zlib_roundtrip_exact "} {
		want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `.*$`).FindString(string(log))
		require.NotEmpty(t, want, prefix)
		assert.Contains(t, rows, want, "the log's line on the screen")
	}
}
