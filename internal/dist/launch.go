package dist

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultGrace is LaunchOptions.Grace's default.
const DefaultGrace = 30 * time.Second

// settle is how soon after the first failing rank is reaped another counts
// as failing at the same moment (see Launch).
const settle = 250 * time.Millisecond

// LaunchOptions are a local launch's: torchrun's standalone mode, or one
// node of several.
type LaunchOptions struct {
	NProcPerNode    int    // --nproc-per-node: ranks on this machine, at least 1
	Nodes, NodeRank int    // --nnodes (0 means 1), --node-rank
	MasterAddr      string // --master-addr; 127.0.0.1 by default for one node
	MasterPort      int    // --master-port; 0 picks a free port (one node only)
	Args            []string
	// Env is the children's base environment (nil: the launcher's own);
	// the variables that describe a rank replace any of the same name.
	Env            []string
	Stdout, Stderr io.Writer // nil: the launcher's own
	// Grace is how long the other ranks get to exit after the first
	// failing one before they are killed (0: DefaultGrace; negative: none).
	Grace time.Duration
}

// Validate checks o's flags, naming them in its errors: --nproc-per-node
// at least 1, --nnodes at least 1 (0 counts as 1), --node-rank in
// 0..nnodes-1, --master-port in 0-65535, and with several nodes a
// --master-addr and a --master-port; a command to run.
func (o LaunchOptions) Validate() error {
	nodes := o.Nodes
	if nodes == 0 {
		nodes = 1
	}
	switch {
	case o.NProcPerNode < 1:
		return fmt.Errorf("dist: --nproc-per-node=%d must be at least 1", o.NProcPerNode)
	case nodes < 1:
		return fmt.Errorf("dist: --nnodes=%d must be at least 1", o.Nodes)
	case o.NodeRank < 0 || o.NodeRank >= nodes:
		return fmt.Errorf("dist: --node-rank=%d must be in 0..%d (--nnodes=%d)", o.NodeRank, nodes-1, nodes)
	case o.MasterPort < 0 || o.MasterPort > 65535:
		return fmt.Errorf("dist: --master-port=%d is out of range (1-65535)", o.MasterPort)
	case nodes > 1 && o.MasterAddr == "":
		return fmt.Errorf("dist: --master-addr is required with --nnodes=%d (the address of node 0, where rank 0 listens)", nodes)
	case nodes > 1 && o.MasterPort == 0:
		return fmt.Errorf("dist: --master-port is required with --nnodes=%d (the same on every node)", nodes)
	case len(o.Args) == 0 || o.Args[0] == "":
		return errors.New("dist: no command to launch")
	}
	return nil
}

// Worlds are the Worlds of this node's children, local rank by local rank
// (Source "golf"; MasterPort as given, 0 included).
func (o LaunchOptions) Worlds() ([]World, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	nodes := max(o.Nodes, 1)
	addr := o.MasterAddr
	if addr == "" {
		addr = "127.0.0.1"
	}
	ws := make([]World, o.NProcPerNode)
	for i := range ws {
		ws[i] = World{
			Rank: o.NodeRank*o.NProcPerNode + i, Size: nodes * o.NProcPerNode,
			LocalRank: i, LocalSize: o.NProcPerNode,
			NodeRank: o.NodeRank, Nodes: nodes,
			MasterAddr: addr, MasterPort: o.MasterPort, Source: "golf",
		}
	}
	return ws, nil
}

// ExitError is a launch's failure: the first rank that ended badly.
type ExitError struct {
	Rank, LocalRank int
	Code            int    // its exit status, -1 where a signal ended it
	Signal          int    // the signal that ended it, 0 if none
	SignalName      string // as the system names it ("killed")
	Killed          []int  // the ranks killed when the grace ran out
	Grace           time.Duration
}

func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Signal != 0 {
		fmt.Fprintf(&b, "dist: rank %d (local rank %d) was ended by signal %d (%s)", e.Rank, e.LocalRank, e.Signal, e.SignalName)
	} else {
		fmt.Fprintf(&b, "dist: rank %d (local rank %d) exited with status %d", e.Rank, e.LocalRank, e.Code)
	}
	if len(e.Killed) > 0 {
		fmt.Fprintf(&b, "; %s killed after %v", rankList(e.Killed), e.Grace)
	}
	return b.String()
}

// ExitCode is the status for the launcher to exit with: the rank's, or 128
// plus the signal's number.
func (e *ExitError) ExitCode() int {
	if e.Signal != 0 {
		return 128 + e.Signal
	}
	return e.Code
}

// FreePort is a TCP port on addr that nothing listens on (it may be taken
// by another process before it is used).
func FreePort(addr string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("dist: finding a free port on %s: %w", addr, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func newJobID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// lockedWriter serializes the children's writes to a writer that is not a
// file (a file gets each child's output directly).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func childWriter(w, def io.Writer, mu *sync.Mutex) io.Writer {
	if w == nil {
		return def
	}
	if _, ok := w.(*os.File); ok {
		return w
	}
	return lockedWriter{mu, w}
}

// Launch starts o.NProcPerNode children running o.Args, each with the
// torchrun variables of its rank (World.Env: RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), GOLF_LAUNCHED=1 so that they do not launch again, and
// GOLF_JOB_ID (the base environment's, else a random one for one node, else
// none: several nodes' launchers cannot agree on a random one). It waits
// for them all.
//
// The children run in a process group of their own, so that a terminal's
// Ctrl-C reaches them once, through the launcher: every SIGINT, SIGTERM
// and SIGHUP the launcher receives during Launch is forwarded to every
// child still running, and ctx's cancellation (where no signal came with
// it) sends each SIGTERM once. On Linux a child is killed if the launcher
// dies.
//
// When a child exits non-zero or is ended by a signal, the others get
// o.Grace to exit (they notice through their Group) and are then killed.
// Launch returns nil when every child exits 0, else an *ExitError naming
// the first failing rank and its status. Which rank failed first is
// blurred by the ranks that notice it: a rank SIGKILLed closes its
// sockets before its parent hears of its end, and the ranks that see that
// may be reaped first. So of the ranks reaped within 250ms of the first
// failing one, the first that a signal ended (a kill, a crash) is named,
// as the likelier cause than ranks that exited with a status; otherwise
// the first reaped.
func Launch(ctx context.Context, o LaunchOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	worlds, _ := o.Worlds()
	port := o.MasterPort
	if port == 0 {
		p, err := FreePort(worlds[0].MasterAddr)
		if err != nil {
			return err
		}
		port = p
	}
	base := o.Env
	if base == nil {
		base = os.Environ()
	}
	jobID := ""
	var env []string
	for _, kv := range base {
		name, value, _ := strings.Cut(kv, "=")
		if name == EnvJobID {
			jobID = value
		}
		drop := false
		for _, n := range envNames {
			drop = drop || n == name
		}
		if !drop {
			env = append(env, kv)
		}
	}
	if jobID == "" && max(o.Nodes, 1) == 1 {
		jobID = newJobID()
	}
	grace := o.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	grace = max(grace, 0)
	var mu sync.Mutex
	stdout := childWriter(o.Stdout, os.Stdout, &mu)
	stderr := childWriter(o.Stderr, os.Stderr, &mu)

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	cmds := make([]*exec.Cmd, len(worlds))
	for i, w := range worlds {
		w.MasterPort, w.JobID = port, jobID
		worlds[i] = w
		cmd := exec.Command(o.Args[0], o.Args[1:]...)
		cmd.Env = append(append([]string(nil), env...), w.Env()...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = childAttr()
		cmds[i] = cmd
	}
	// The children start from one thread that outlives them, since a
	// parent-death signal follows the thread that started the child.
	started := make(chan error, 1)
	reaped := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for i, cmd := range cmds {
			if err := cmd.Start(); err != nil {
				for _, c := range cmds[:i] {
					kill(c)
					c.Wait()
				}
				started <- fmt.Errorf("dist: starting rank %d (%s): %w", worlds[i].Rank, o.Args[0], err)
				runtime.UnlockOSThread()
				return
			}
		}
		started <- nil
		<-reaped
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return err
	}
	defer close(reaped)

	type exit struct {
		i  int
		ps *os.ProcessState
	}
	exits := make(chan exit, len(cmds))
	for i, cmd := range cmds {
		go func() {
			cmd.Wait()
			exits <- exit{i, cmd.ProcessState}
		}()
	}
	done := make([]bool, len(cmds))
	forward := func(s os.Signal) {
		for i, cmd := range cmds {
			if !done[i] {
				cmd.Process.Signal(s)
			}
		}
	}
	// failures are the ranks that ended badly, in the order they were
	// reaped; those reaped within settle of the first are candidates for
	// the cause (see Launch).
	var failures []*ExitError
	var firstAt time.Time
	var killed []int
	var graceOver <-chan time.Time
	signalled := false
	ctxDone := ctx.Done()
	for running := len(cmds); running > 0; {
		select {
		case e := <-exits:
			running--
			done[e.i] = true
			code, sig, name := exitStatus(e.ps)
			if code == 0 && sig == 0 {
				break
			}
			if slices.Contains(killed, worlds[e.i].Rank) {
				break
			}
			if len(failures) == 0 {
				firstAt = time.Now()
				if running > 0 {
					t := time.NewTimer(grace)
					defer t.Stop()
					graceOver = t.C
				}
			}
			if time.Since(firstAt) <= settle {
				failures = append(failures, &ExitError{Rank: worlds[e.i].Rank, LocalRank: e.i, Code: code, Signal: sig, SignalName: name, Grace: grace})
			}
		case s := <-sigs:
			signalled = true
			forward(s)
		case <-ctxDone:
			ctxDone = nil
			if signalled {
				break
			}
			// A signal that cancelled ctx (golf's main does so) arrives here
			// too, a moment later: forward it rather than a second one.
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case s := <-sigs:
				forward(s)
			case <-t.C:
				forward(terminate)
			}
			t.Stop()
			signalled = true
		case <-graceOver:
			graceOver = nil
			for i, cmd := range cmds {
				if !done[i] {
					killed = append(killed, worlds[i].Rank)
					kill(cmd)
				}
			}
		}
	}
	if len(failures) == 0 {
		return nil
	}
	first := failures[0]
	for _, f := range failures {
		if f.Signal != 0 {
			first = f
			break
		}
	}
	first.Killed = killed
	return first
}
