package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// Logger prints each line on the console and appends it to the run's log
// file (logs/<run_id>.txt), as the reference's log(). On a terminal a
// status line (step, train loss, tokens/s, ETA) sits below the lines; it
// never reaches the file.
type Logger struct {
	mu      sync.Mutex
	path    string
	file    *os.File
	console io.Writer
	tty     terminal // the console when it is a terminal, else nil

	status   *Progress     // what the status line shows; nil while none is shown
	shown    bool          // a status line is on screen, the cursor parked at its start
	drawn    time.Time     // when it was last drawn
	drawnW   int           // for how many columns
	stopTick chan struct{} // closed to stop the status line's clock
	tickDone chan struct{} // closed when the clock has stopped
}

// terminal is a console that can show a status line: *os.File on a TTY,
// or anything else that knows its width (the tests' fake terminal).
type terminal interface {
	io.Writer
	// Width is the terminal's width in columns now (<= 0: unknown).
	Width() int
}

// ttyFile is a terminal on a file descriptor.
type ttyFile struct{ f *os.File }

func (t ttyFile) Write(p []byte) (int, error) { return t.f.Write(p) }

func (t ttyFile) Width() int {
	w, _, err := term.GetSize(int(t.f.Fd()))
	if err != nil {
		return 0
	}
	return w
}

func terminalOf(console io.Writer) terminal {
	switch c := console.(type) {
	case terminal:
		return c
	case *os.File:
		if term.IsTerminal(int(c.Fd())) {
			return ttyFile{c}
		}
	}
	return nil
}

// NewLogger opens (appending) path and logs to console as well; console may
// be nil for a silent run. The directory must exist.
func NewLogger(path string, console io.Writer) (*Logger, error) {
	return newLogger(path, console, false)
}

// newLogger is NewLogger that, with truncate, starts the file empty (a run
// that replaces an earlier one of its RUN_ID).
func newLogger(path string, console io.Writer, truncate bool) (*Logger, error) {
	mode := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if truncate {
		mode |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, mode, 0o644)
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR: cannot write log file: %w", err)
	}
	return &Logger{path: path, file: f, console: console, tty: terminalOf(console)}, nil
}

// Path is the log file's path.
func (l *Logger) Path() string { return l.path }

// Log writes msg to the console and the file.
func (l *Logger) Log(msg string) { l.write(msg, true, true) }

// File writes msg to the file only (the configuration dump, errors that
// the command prints itself).
func (l *Logger) File(msg string) { l.write(msg, false, true) }

// Console writes msg to the console only (the notice of a signal, the
// closing summary).
func (l *Logger) Console(msg string) { l.write(msg, true, false) }

func (l *Logger) write(msg string, console, file bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if console && l.console != nil {
		if l.status != nil {
			l.drawLocked(msg)
		} else {
			fmt.Fprintln(l.console, msg)
		}
	}
	if file && l.file != nil {
		fmt.Fprintln(l.file, msg)
	}
}

// Logf formats then logs.
func (l *Logger) Logf(format string, args ...any) { l.Log(fmt.Sprintf(format, args...)) }

// Progress is what the status line shows.
type Progress struct {
	Step, Total int
	Loss        float64       // the latest train loss read; NaN: none yet
	TokS        float64       // tokens per second of this process's training; 0: not known yet
	ETA         time.Duration // training time left at this process's rate; < 0: not known yet
	At          time.Time     // when ETA was estimated: the line counts down from there
}

// statusRefresh is how often the status line is redrawn between updates
// (the ETA counts down, a resized terminal gets a line of its new width).
const statusRefresh = 500 * time.Millisecond

// StartBar shows a status line under the log lines when the console is a
// terminal; otherwise it does nothing.
func (l *Logger) StartBar(total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tty == nil || total <= 0 || l.status != nil {
		return
	}
	l.status = &Progress{Total: total, Loss: math.NaN(), ETA: -1}
	l.stopTick, l.tickDone = make(chan struct{}), make(chan struct{})
	go l.tick(l.stopTick, l.tickDone)
	l.drawLocked()
}

func (l *Logger) tick(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(statusRefresh)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.mu.Lock()
			if l.status != nil {
				l.drawLocked()
			}
			l.mu.Unlock()
		}
	}
}

// BarShown says whether a status line is shown.
func (l *Logger) BarShown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status != nil
}

// SetProgress updates the status line: it is drawn again at once unless
// it was drawn less than statusMinRedraw ago for the same width (fast
// steps), else at the next tick.
func (l *Logger) SetProgress(p Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status == nil {
		return
	}
	p.Total = max(p.Total, l.status.Total)
	*l.status = p
	if time.Since(l.drawn) >= statusMinRedraw || l.tty.Width() != l.drawnW {
		l.drawLocked()
	}
}

// statusMinRedraw is the shortest time between two draws of the status
// line for progress alone.
const statusMinRedraw = 100 * time.Millisecond

// StopBar removes the status line.
func (l *Logger) StopBar() {
	l.mu.Lock()
	if l.status == nil {
		l.mu.Unlock()
		return
	}
	l.status = nil
	if l.shown {
		io.WriteString(l.tty, "\r\x1b[J")
		l.shown = false
	}
	stop, done := l.stopTick, l.tickDone
	l.mu.Unlock()
	close(stop)
	<-done
}

// drawLocked prints the lines (none: a redraw) above the status line and draws
// the status line for the terminal's width now. The cursor is left at the
// start of the status line, and the next draw erases from there to the end
// of the screen: a terminal that reflows the line when it is narrowed
// keeps the cursor at the line's start, so every row the old line wraps
// into is erased too.
func (l *Logger) drawLocked(lines ...string) {
	width := l.tty.Width()
	if width <= 0 {
		width = 80
	}
	var b strings.Builder
	if l.shown {
		b.WriteString("\r\x1b[J")
	}
	for _, msg := range lines {
		b.WriteString(msg)
		b.WriteByte('\n')
	}
	b.WriteString(statusLine(*l.status, width, time.Now()))
	b.WriteByte('\r')
	io.WriteString(l.tty, b.String())
	l.shown, l.drawn, l.drawnW = true, time.Now(), width
}

// statusLine renders p for a terminal of width columns at time now: the
// most detailed of its forms that fits in width-1 columns (a line of the
// full width would leave the cursor waiting to wrap), cut to fit when none
// does.
func statusLine(p Progress, width int, now time.Time) string {
	loss, loss3 := "-", "-"
	if !math.IsNaN(p.Loss) {
		loss, loss3 = fmt.Sprintf("%.4f", p.Loss), fmt.Sprintf("%.3f", p.Loss)
	}
	tokS, tokSShort := "-", "-"
	if p.TokS > 0 {
		tokS, tokSShort = strconv.FormatFloat(p.TokS, 'f', 0, 64), shortCount(p.TokS)
	}
	eta := "-"
	if p.ETA >= 0 {
		left := p.ETA
		if !p.At.IsZero() {
			left -= now.Sub(p.At)
		}
		eta = formatETA(max(left, 0))
	}
	steps := fmt.Sprintf("%d/%d", p.Step, p.Total)
	tail := fmt.Sprintf("loss %s  %s tok/s  ETA %s", loss, tokS, eta)
	limit := width - 1
	if limit < 1 {
		limit = 1
	}
	// The bar: the room left, 10 to 30 cells.
	if room := limit - len("step "+steps+" [] 100%  "+tail); room >= 10 {
		cells := min(room, 30)
		filled := 0
		pct := 0
		if p.Total > 0 {
			filled = min(cells, cells*p.Step/p.Total)
			pct = 100 * p.Step / p.Total
		}
		bar := strings.Repeat("=", filled) + strings.Repeat("-", cells-filled)
		return fmt.Sprintf("step %s [%s] %3d%%  %s", steps, bar, pct, tail)
	}
	for _, s := range []string{
		"step " + steps + "  " + tail,
		fmt.Sprintf("%s loss %s %s tok/s ETA %s", steps, loss3, tokSShort, eta),
		fmt.Sprintf("%s %s %s tok/s ETA %s", steps, loss3, tokSShort, eta),
	} {
		if len(s) <= limit {
			return s
		}
	}
	s := fmt.Sprintf("%s ETA %s", steps, eta)
	if len(s) > limit {
		s = s[:limit]
	}
	return s
}

// shortCount is n with a k/M suffix: 11873 → "11.9k".
func shortCount(n float64) string {
	switch {
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'f', 1, 64) + "M"
	case n >= 1e3:
		return strconv.FormatFloat(n/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

// formatETA writes d as 45s, 1m09s or 2h03m.
func formatETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// Close stops the status line and closes the file.
func (l *Logger) Close() error {
	l.StopBar()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// logPath is OUT_DIR/<run_id>.txt.
func logPath(outDir, runID string) string { return filepath.Join(outDir, runID+".txt") }

// metricsPath is OUT_DIR/<run_id>.metrics.jsonl.
func metricsPath(outDir, runID string) string {
	return filepath.Join(outDir, runID+".metrics.jsonl")
}

// metricRecord is one line of the metrics file: a step's train loss, LR
// scale, tokens/s and training time, and the validation at that step when
// there was one. Step 0 has a line only when it was validated.
type metricRecord struct {
	Step        int
	HasTrain    bool
	TrainLoss   float64 // non-finite: written as null (a step the loss scaler skipped)
	LRScale     float64
	TokS        float64
	TrainTimeMs float64
	Skipped     bool
	HasVal      bool
	ValLoss     float64
	ValBPB      float64
}

// MarshalJSON writes the record as the metrics file's line (without the
// newline): {"step":1,"train_loss":6.93,"lr_scale":1,"tok_s":10037.2,
// "train_time_ms":408.1}, then "val_loss" and "val_bpb" when validated.
func (m metricRecord) MarshalJSON() ([]byte, error) {
	num := func(x float64, bits int) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "null"
		}
		return strconv.FormatFloat(x, 'g', -1, bits)
	}
	b := []byte(`{"step":` + strconv.Itoa(m.Step))
	if m.HasTrain {
		b = fmt.Appendf(b, `,"train_loss":%s,"lr_scale":%s,"tok_s":%s,"train_time_ms":%s`,
			num(m.TrainLoss, 64), num(m.LRScale, 64), num(math.Round(m.TokS*10)/10, 64), num(math.Round(m.TrainTimeMs*10)/10, 64))
		if m.Skipped {
			b = append(b, `,"skipped":true`...)
		}
	}
	if m.HasVal {
		b = fmt.Appendf(b, `,"val_loss":%s,"val_bpb":%s`, num(m.ValLoss, 64), num(m.ValBPB, 64))
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a line written by MarshalJSON.
func (m *metricRecord) UnmarshalJSON(b []byte) error {
	var v struct {
		Step        int      `json:"step"`
		TrainLoss   *float64 `json:"train_loss"`
		LRScale     *float64 `json:"lr_scale"`
		TokS        *float64 `json:"tok_s"`
		TrainTimeMs *float64 `json:"train_time_ms"`
		Skipped     bool     `json:"skipped"`
		ValLoss     *float64 `json:"val_loss"`
		ValBPB      *float64 `json:"val_bpb"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	val := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*m = metricRecord{Step: v.Step, Skipped: v.Skipped}
	if v.LRScale != nil || v.TrainTimeMs != nil || v.TrainLoss != nil {
		m.HasTrain = true
		m.TrainLoss, m.LRScale, m.TokS, m.TrainTimeMs = val(v.TrainLoss), val(v.LRScale), val(v.TokS), val(v.TrainTimeMs)
	}
	if v.ValLoss != nil || v.ValBPB != nil {
		m.HasVal = true
		m.ValLoss, m.ValBPB = val(v.ValLoss), val(v.ValBPB)
	}
	return nil
}

// metricsFile is the run's metrics file, appended a batch of whole lines
// at a time (one write each), so that a run killed at any point leaves
// only whole lines.
type metricsFile struct {
	path string
	f    *os.File
}

// openMetrics starts the metrics file at path with the lines of first (a
// resumed run's records before its checkpoint's step, none for a fresh
// run), replacing whatever the file held, then opens it for appending.
func openMetrics(path string, first []metricRecord) (*metricsFile, error) {
	var b []byte
	for _, r := range first {
		line, _ := r.MarshalJSON()
		b = append(append(b, line...), '\n')
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return nil, fmt.Errorf("OUT_DIR: cannot write metrics file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR: cannot write metrics file: %w", err)
	}
	return &metricsFile{path: path, f: f}, nil
}

// write appends the records' lines in one write.
func (m *metricsFile) write(recs []metricRecord) error {
	if m == nil || m.f == nil || len(recs) == 0 {
		return nil
	}
	var b []byte
	for _, r := range recs {
		line, _ := r.MarshalJSON()
		b = append(append(b, line...), '\n')
	}
	if _, err := m.f.Write(b); err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	return nil
}

func (m *metricsFile) close() error {
	if m == nil || m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}
