package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/internal/atomicfile"
	"github.com/golf-ml/golf/internal/dist"
	"github.com/golf-ml/golf/train"
)

// Data-parallel training: golf train started by torchrun (or Slurm, or
// Open MPI) as one rank of several reads its place from the environment;
// golf train --nproc-per-node N starts the N ranks of this machine itself,
// as torchrun's standalone mode does. See train/parallel.go for what a
// rank does.

// parallelFlags are the launcher's flags.
type parallelFlags struct {
	nproc, nnodes, nodeRank, masterPort int
	masterAddr                          string
	timeout                             time.Duration
}

func (p *parallelFlags) flags() []cli.Flag {
	p.nnodes, p.timeout = 1, 5*time.Minute
	return []cli.Flag{
		&cli.IntFlag{Name: "nproc-per-node", Category: catParallel, Destination: &p.nproc,
			Usage: "start this many ranks on this machine, one per GPU (torchrun --nproc_per_node); 0: one process, or the ranks torchrun, Slurm or Open MPI started"},
		&cli.IntFlag{Name: "nnodes", Category: catParallel, Value: p.nnodes, Destination: &p.nnodes,
			Usage: "machines in the job (torchrun --nnodes); more than one needs --master-addr and --master-port"},
		&cli.IntFlag{Name: "node-rank", Category: catParallel, Destination: &p.nodeRank,
			Usage: "this machine's place among them, from 0 (torchrun --node_rank)"},
		&cli.StringFlag{Name: "master-addr", Category: catParallel, Destination: &p.masterAddr,
			Usage: "address of the machine of rank 0, where the ranks meet (default 127.0.0.1 on one machine)"},
		&cli.IntFlag{Name: "master-port", Category: catParallel, Destination: &p.masterPort,
			Usage: "TCP port of the rendezvous on that machine (0: a free port, one machine only)"},
		&cli.DurationFlag{Name: "rendezvous-timeout", Category: catParallel, Value: p.timeout, Destination: &p.timeout,
			Usage: "how long the ranks wait for each other to start"},
	}
}

// launch starts this machine's ranks when --nproc-per-node asks for them
// (and this process is not one of them); ok says whether it did.
func (p *parallelFlags) launch(ctx context.Context) (ok bool, err error) {
	if p.nproc == 0 || os.Getenv(dist.EnvLaunched) != "" {
		if p.nproc == 0 && (p.nnodes != 1 || p.nodeRank != 0) {
			return false, errors.New("--nnodes and --node-rank go with --nproc-per-node")
		}
		return false, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return true, fmt.Errorf("--nproc-per-node: this program's path: %w", err)
	}
	args := append([]string{exe}, os.Args[1:]...)
	err = dist.Launch(ctx, dist.LaunchOptions{
		NProcPerNode: p.nproc, Nodes: p.nnodes, NodeRank: p.nodeRank,
		MasterAddr: p.masterAddr, MasterPort: p.masterPort,
		Args: args, Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr,
		Grace: 30 * time.Second,
	})
	var ee *dist.ExitError
	if ctx.Err() != nil && errors.As(err, &ee) {
		// The ranks stopped for the signal this launcher passed on and
		// said so; the exit status carries it.
		return true, quietExit{ee.ExitCode()}
	}
	return true, err
}

// rendezvousPayload is what rank 0 hands every rank when they meet: the
// run's id (its own, or the one it made) and the collective's unique id.
type rendezvousPayload struct {
	RunID string `json:"run_id"`
	ID    []byte `json:"id"`
}

// trainRank trains cfg as one rank of w. It never returns while another
// rank is gone: the watchdog ends this process, with the failure named.
func trainRank(ctx context.Context, cfg train.Config, w dist.World, timeout time.Duration) error {
	if cfg.RunID == "" && w.Rank == 0 {
		cfg.RunID = train.NewRunID()
	}
	var group *dist.Group
	join := func(id []byte) ([]byte, error) {
		mine, err := json.Marshal(rendezvousPayload{RunID: cfg.RunID, ID: id})
		if err != nil {
			return nil, err
		}
		g, got, err := dist.Join(ctx, w, mine, timeout)
		if err != nil {
			return nil, err
		}
		group = g
		var p rendezvousPayload
		if err := json.Unmarshal(got, &p); err != nil {
			return nil, fmt.Errorf("the rendezvous at %s: rank 0's payload: %w", w.Addr(), err)
		}
		cfg.RunID = p.RunID
		return p.ID, nil
	}
	dev, why, err := train.OpenParallel(cfg.Backend, w.LocalRank, w.Rank, w.Size, join)
	if err != nil {
		if group != nil {
			group.Abort(err.Error())
		}
		return err
	}
	cfg.BackendChoice = why
	done := make(chan struct{})
	defer close(done)
	go watchdog(w.Rank, group, dev, done)
	par := &train.Parallel{Rank: w.Rank, Size: w.Size, Ranks: group, Reduce: dev.Reduce}
	_, err = runTrain(train.WithParallel(ctx, par), cfg, dev.Backend)
	var ie *train.Interrupted
	switch {
	case err == nil, errors.As(err, &ie):
		// Every rank stopped at the same step boundary.
		err = errors.Join(err, dev.Close())
		group.Close()
	default:
		group.Abort(err.Error())
		dev.Abort()
	}
	if w.Rank != 0 && err != nil {
		if ie != nil {
			// Rank 0 says where the state is and how to resume.
			code := 130
			var se signalError
			if errors.As(err, &se) {
				code = se.exitCode()
			}
			return quietExit{code}
		}
		err = fmt.Errorf("rank %d: %w", w.Rank, err)
	}
	return err
}

// watchdogPoll is how often the watchdog asks the collective for an
// asynchronous error.
const watchdogPoll = time.Second

// watchdog ends this rank when another one fails or vanishes (the group
// says so) or the collective reports an error: it aborts the collective,
// which a blocked all-reduce would otherwise wait on forever, tells the
// other ranks, and exits; the last checkpoint is whole (checkpoints are
// written to a temporary file and renamed).
func watchdog(rank int, g *dist.Group, dev train.ParallelDevice, done <-chan struct{}) {
	tick := time.NewTicker(watchdogPoll)
	defer tick.Stop()
	for {
		var failure error
		select {
		case <-done:
			return
		case failure = <-g.Failed():
		case <-tick.C:
			if dev.Err == nil {
				continue
			}
			if failure = dev.Err(); failure == nil {
				continue
			}
			failure = fmt.Errorf("rank %d: the collective failed: %w", rank, failure)
			g.Abort(failure.Error())
		}
		select {
		case <-done:
			return
		default:
		}
		if dev.Abort != nil {
			dev.Abort()
		}
		atomicfile.RemoveInFlight()
		fmt.Fprintf(os.Stderr, "golf: rank %d: %v; stopping this rank\n", rank, failure)
		os.Exit(1)
	}
}
