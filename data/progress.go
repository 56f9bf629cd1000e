package data

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// TerminalProgress returns a ValidateOptions.Progress that draws a bar of
// the bytes validated (with files done and an ETA) on w, and stop, which
// removes the bar and must be called once validation returns. When w is
// not a terminal it returns a nil progress and a stop that does nothing,
// so logs and CI output get no bar. Use it as
//
//	progress, stop := data.TerminalProgress(os.Stderr, "validate")
//	sets, err := data.ValidateShardSets(ctx, patterns, vocab, data.ValidateOptions{Progress: progress})
//	stop()
func TerminalProgress(w io.Writer, name string) (progress func(ValidateProgress), stop func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	return progressBar(w, name)
}

// progressBar is TerminalProgress without the terminal check. The bar is
// created at the first report, when the total is known.
func progressBar(w io.Writer, name string) (progress func(ValidateProgress), stop func()) {
	var (
		mu        sync.Mutex
		prog      *mpb.Progress
		bar       *mpb.Bar
		done, all atomic.Int64 // files, read by mpb's render goroutine
		complete  bool         // the last report reached the total
	)
	progress = func(p ValidateProgress) {
		mu.Lock()
		defer mu.Unlock()
		complete = p.BytesDone >= p.Bytes
		done.Store(int64(p.FilesDone))
		all.Store(int64(p.Files))
		if bar == nil {
			prog = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithAutoRefresh())
			bar = prog.AddBar(p.Bytes,
				mpb.PrependDecorators(decor.Name(name+" "), decor.Any(func(decor.Statistics) string {
					return fmt.Sprintf("files %d/%d", done.Load(), all.Load())
				}, decor.WCSyncSpaceR)),
				mpb.AppendDecorators(decor.CountersKibiByte("% .1f / % .1f"), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)))
		}
		bar.SetCurrent(p.BytesDone)
	}
	stop = func() {
		mu.Lock()
		prog, bar, complete := prog, bar, complete
		mu.Unlock()
		if bar == nil {
			return
		}
		// Whether the bar is complete is known here: mpb's Bar.Completed
		// reads the bar's state unsynchronised once its last frame is
		// rendering (a data race in mpb v8.9.3, seen under -race).
		if !complete {
			bar.Abort(false)
		}
		prog.Wait()
	}
	return progress, stop
}
