package train

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Logger prints each line on the console and appends it to the run's log
// file (logs/<run_id>.txt), as the reference's log(). On a terminal a
// progress bar sits below the lines; it never reaches the file.
type Logger struct {
	mu      sync.Mutex
	path    string
	file    *os.File
	console io.Writer
	prog    *mpb.Progress
	bar     *mpb.Bar
}

// NewLogger opens (appending) path and logs to console as well; console may
// be nil for a silent run. The directory must exist.
func NewLogger(path string, console io.Writer) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR: cannot write log file: %w", err)
	}
	return &Logger{path: path, file: f, console: console}, nil
}

// Path is the log file's path.
func (l *Logger) Path() string { return l.path }

// Log writes msg to the console and the file.
func (l *Logger) Log(msg string) { l.write(msg, true) }

// File writes msg to the file only (the configuration dump).
func (l *Logger) File(msg string) { l.write(msg, false) }

func (l *Logger) write(msg string, console bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if console && l.console != nil {
		w := l.console
		if l.prog != nil {
			w = l.prog
		}
		fmt.Fprintln(w, msg)
	}
	if l.file != nil {
		fmt.Fprintln(l.file, msg)
	}
}

// Logf formats then logs.
func (l *Logger) Logf(format string, args ...any) { l.Log(fmt.Sprintf(format, args...)) }

// StartBar shows a progress bar of total steps when the console is a
// terminal; otherwise it does nothing.
func (l *Logger) StartBar(name string, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.console.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total <= 0 {
		return
	}
	l.prog = mpb.New(mpb.WithOutput(f), mpb.WithWidth(40))
	l.bar = l.prog.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d/%d")),
		mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)))
}

// Step advances the bar to step.
func (l *Logger) Step(step int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bar != nil {
		l.bar.SetCurrent(int64(step))
	}
}

// StopBar removes the bar.
func (l *Logger) StopBar() {
	l.mu.Lock()
	prog, bar := l.prog, l.bar
	l.prog, l.bar = nil, nil
	l.mu.Unlock()
	if bar != nil {
		bar.Abort(true)
		prog.Wait()
	}
}

// Close stops the bar and closes the file.
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
