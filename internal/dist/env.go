package dist

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// World is one process's place in a data-parallel job.
type World struct {
	Rank, Size           int // global
	LocalRank, LocalSize int // on this machine; LocalRank picks the GPU
	NodeRank, Nodes      int
	MasterAddr           string
	MasterPort           int
	Source               string // "torchrun", "slurm", "openmpi", "golf" (our own launcher), or "" when single process
	// JobID tells the ranks of one job from those of another at the
	// rendezvous; it is the same on every rank of a job ("" is a valid id).
	JobID string
}

// Environment variables that golf's launcher sets for its children, besides
// torchrun's.
const (
	// EnvLaunched is "1" in a process started by Launch: it must not launch
	// again.
	EnvLaunched = "GOLF_LAUNCHED"
	// EnvJobID is the job id (World.JobID) of a process started by Launch;
	// it may also be set by hand to keep two jobs apart.
	EnvJobID = "GOLF_JOB_ID"
)

// Distributed reports whether the job has more than one rank.
func (w World) Distributed() bool { return w.Size > 1 }

// Single is the World of a process that is the whole job.
func Single() World { return World{Size: 1, LocalSize: 1, Nodes: 1} }

// Validate checks that w is consistent: 0 ≤ Rank < Size, 0 ≤ LocalRank <
// LocalSize ≤ Size, 0 ≤ NodeRank < Nodes, and, with more than one rank, a
// MasterAddr and a MasterPort in 1-65535. Its errors name torchrun's
// variables.
func (w World) Validate() error {
	switch {
	case w.Size < 1:
		return fmt.Errorf("dist: WORLD_SIZE=%d must be at least 1", w.Size)
	case w.Rank < 0 || w.Rank >= w.Size:
		return fmt.Errorf("dist: RANK=%d must be in 0..%d (WORLD_SIZE=%d)", w.Rank, w.Size-1, w.Size)
	case w.LocalSize < 1 || w.LocalSize > w.Size:
		return fmt.Errorf("dist: LOCAL_WORLD_SIZE=%d must be in 1..%d (WORLD_SIZE=%d)", w.LocalSize, w.Size, w.Size)
	case w.LocalRank < 0 || w.LocalRank >= w.LocalSize:
		return fmt.Errorf("dist: LOCAL_RANK=%d must be in 0..%d (LOCAL_WORLD_SIZE=%d)", w.LocalRank, w.LocalSize-1, w.LocalSize)
	case w.Nodes < 1 || w.Nodes > w.Size:
		return fmt.Errorf("dist: GROUP_WORLD_SIZE=%d must be in 1..%d (WORLD_SIZE=%d)", w.Nodes, w.Size, w.Size)
	case w.NodeRank < 0 || w.NodeRank >= w.Nodes:
		return fmt.Errorf("dist: GROUP_RANK=%d must be in 0..%d (%d nodes)", w.NodeRank, w.Nodes-1, w.Nodes)
	case w.MasterPort < 0 || w.MasterPort > 65535:
		return fmt.Errorf("dist: MASTER_PORT=%d is out of range (1-65535)", w.MasterPort)
	}
	if w.Size > 1 {
		if w.MasterAddr == "" {
			return fmt.Errorf("dist: MASTER_ADDR is not set (WORLD_SIZE=%d needs rank 0's address)", w.Size)
		}
		if w.MasterPort == 0 {
			return fmt.Errorf("dist: MASTER_PORT is not set (WORLD_SIZE=%d needs rank 0's port)", w.Size)
		}
	}
	return nil
}

// Addr is MasterAddr:MasterPort.
func (w World) Addr() string { return net.JoinHostPort(w.MasterAddr, strconv.Itoa(w.MasterPort)) }

// Env is the torchrun variables that describe w (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), as NAME=value for a child's environment, with GOLF_JOB_ID
// where w has a JobID and GOLF_LAUNCHED=1 where w.Source is "golf".
// FromEnv of them gives w back.
func (w World) Env() []string {
	env := []string{
		"RANK=" + strconv.Itoa(w.Rank),
		"WORLD_SIZE=" + strconv.Itoa(w.Size),
		"LOCAL_RANK=" + strconv.Itoa(w.LocalRank),
		"LOCAL_WORLD_SIZE=" + strconv.Itoa(w.LocalSize),
		"GROUP_RANK=" + strconv.Itoa(w.NodeRank),
		"GROUP_WORLD_SIZE=" + strconv.Itoa(w.Nodes),
	}
	if w.MasterAddr != "" {
		env = append(env, "MASTER_ADDR="+w.MasterAddr)
	}
	if w.MasterPort != 0 {
		env = append(env, "MASTER_PORT="+strconv.Itoa(w.MasterPort))
	}
	if w.JobID != "" {
		env = append(env, EnvJobID+"="+w.JobID)
	}
	if w.Source == "golf" {
		env = append(env, EnvLaunched+"=1")
	}
	return env
}

// envNames is every variable Env may set: a launcher removes them from a
// child's base environment before adding its own.
var envNames = []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
	"GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", EnvJobID, EnvLaunched}

// FromEnv reads the World of this process from its environment (getenv is
// os.Getenv, or a table in tests; an empty value counts as absent).
//
// torchrun (RANK or WORLD_SIZE set; Source "golf" where GOLF_LAUNCHED=1 as
// well): RANK and WORLD_SIZE are both required; LOCAL_RANK is required
// when WORLD_SIZE > 1 (0 otherwise); LOCAL_WORLD_SIZE defaults to
// WORLD_SIZE (torch.distributed.launch does not set it), GROUP_RANK to 0 and
// GROUP_WORLD_SIZE (the number of nodes) to WORLD_SIZE / LOCAL_WORLD_SIZE
// rounded up. The job id is GOLF_JOB_ID, else TORCHELASTIC_RUN_ID.
//
// Open MPI (OMPI_COMM_WORLD_RANK set): OMPI_COMM_WORLD_SIZE is required,
// OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE default to 0
// and the size for one process. Open MPI names no node index, so NodeRank
// is Rank / LocalSize and Nodes is Size / LocalSize rounded up (exact for
// mpirun's default placement, ranks filling one node after another; nothing
// but LocalRank is used to pick a device). It names no address of rank 0
// either: MASTER_ADDR and MASTER_PORT are required with more than one rank
// (mpirun -x MASTER_ADDR=host0 -x MASTER_PORT=29500). The job id is
// OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE.
//
// Slurm (SLURM_PROCID set; start golf with srun, one task per GPU):
// SLURM_NTASKS (or SLURM_NPROCS) is required; SLURM_LOCALID defaults to 0;
// the local size is SLURM_NTASKS_PER_NODE, else this node's entry of
// SLURM_TASKS_PER_NODE ("4(x2),3": 4 on nodes 0 and 1, 3 on node 2), else
// the whole job on one node; SLURM_NODEID defaults to 0 and SLURM_NNODES
// (or SLURM_JOB_NUM_NODES) to 1. Where MASTER_ADDR is not set it is the
// first host of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or SLURM_NODELIST
// ("gpu[07-08,11]" → "gpu07"), and where MASTER_PORT is not set it is
// 20000 + SLURM_JOB_ID mod 10000, the same on every node of the job and
// outside Linux's ephemeral ports. The job id is SLURM_JOB_ID.SLURM_STEP_ID.
//
// None of these: the single-process World{Size: 1, LocalSize: 1, Nodes: 1}.
//
// A value that is not an integer, a rank not below its size, a port out of
// range or a job of several ranks without rank 0's address gives an error
// naming the variable and its value.
func FromEnv(getenv func(string) string) (World, error) {
	r := envReader{getenv: getenv}
	var w World
	switch {
	case r.has("RANK") || r.has("WORLD_SIZE"):
		w = r.torchrun()
	case r.has("OMPI_COMM_WORLD_RANK"):
		w = r.openmpi()
	case r.has("SLURM_PROCID"):
		w = r.slurm()
	default:
		return Single(), nil
	}
	if r.err != nil {
		return World{}, r.err
	}
	if err := r.check(w); err != nil {
		return World{}, err
	}
	return w, nil
}

// envReader reads variables, keeping the first error.
type envReader struct {
	getenv func(string) string
	err    error
	// names are the variables each World field came from, for errors.
	rank, size, localRank, localSize, nodeRank, nodes string
}

func (r *envReader) has(name string) bool { return r.getenv(name) != "" }

func (r *envReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("dist: "+format, args...)
	}
}

// int reads name as an integer; absent gives def. The first present name of
// names is used.
func (r *envReader) int(def int, names ...string) (int, string) {
	for _, name := range names {
		v := r.getenv(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			r.fail("%s=%q is not an integer", name, v)
			return def, name
		}
		return n, name
	}
	return def, names[0]
}

func (r *envReader) require(names ...string) {
	for _, name := range names {
		if r.has(name) {
			return
		}
	}
	if r.err == nil {
		r.fail("%s is not set", names[0])
	}
}

func (r *envReader) master(w *World) {
	w.MasterAddr = strings.TrimSpace(r.getenv("MASTER_ADDR"))
	port, _ := r.int(0, "MASTER_PORT")
	if r.has("MASTER_PORT") && (port < 1 || port > 65535) {
		r.fail("MASTER_PORT=%s is out of range (1-65535)", r.getenv("MASTER_PORT"))
	}
	w.MasterPort = port
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 1
	}
	return (a + b - 1) / b
}

func (r *envReader) torchrun() World {
	w := World{Source: "torchrun"}
	if r.getenv(EnvLaunched) == "1" {
		w.Source = "golf"
	}
	r.require("RANK")
	r.require("WORLD_SIZE")
	w.Rank, r.rank = r.int(0, "RANK")
	w.Size, r.size = r.int(1, "WORLD_SIZE")
	if w.Size > 1 {
		r.require("LOCAL_RANK")
	}
	w.LocalRank, r.localRank = r.int(0, "LOCAL_RANK")
	w.LocalSize, r.localSize = r.int(w.Size, "LOCAL_WORLD_SIZE")
	w.NodeRank, r.nodeRank = r.int(0, "GROUP_RANK")
	w.Nodes, r.nodes = r.int(ceilDiv(w.Size, w.LocalSize), "GROUP_WORLD_SIZE")
	r.master(&w)
	w.JobID = r.getenv(EnvJobID)
	if w.JobID == "" {
		w.JobID = r.getenv("TORCHELASTIC_RUN_ID")
	}
	return w
}

func (r *envReader) openmpi() World {
	w := World{Source: "openmpi"}
	r.require("OMPI_COMM_WORLD_SIZE")
	w.Rank, r.rank = r.int(0, "OMPI_COMM_WORLD_RANK")
	w.Size, r.size = r.int(1, "OMPI_COMM_WORLD_SIZE")
	w.LocalRank, r.localRank = r.int(0, "OMPI_COMM_WORLD_LOCAL_RANK")
	w.LocalSize, r.localSize = r.int(w.Size, "OMPI_COMM_WORLD_LOCAL_SIZE")
	if w.LocalSize >= 1 {
		w.NodeRank = w.Rank / w.LocalSize
	}
	w.Nodes = ceilDiv(w.Size, w.LocalSize)
	r.nodeRank, r.nodes = "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"
	r.master(&w)
	w.JobID = r.getenv("OMPI_MCA_ess_base_jobid")
	if w.JobID == "" {
		w.JobID = r.getenv("PMIX_NAMESPACE")
	}
	return w
}

func (r *envReader) slurm() World {
	w := World{Source: "slurm"}
	r.require("SLURM_NTASKS", "SLURM_NPROCS")
	w.Rank, r.rank = r.int(0, "SLURM_PROCID")
	w.Size, r.size = r.int(1, "SLURM_NTASKS", "SLURM_NPROCS")
	w.LocalRank, r.localRank = r.int(0, "SLURM_LOCALID")
	w.NodeRank, r.nodeRank = r.int(0, "SLURM_NODEID")
	w.Nodes, r.nodes = r.int(1, "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
	switch {
	case r.has("SLURM_NTASKS_PER_NODE"):
		w.LocalSize, r.localSize = r.int(0, "SLURM_NTASKS_PER_NODE")
	case r.has("SLURM_TASKS_PER_NODE"):
		r.localSize = "SLURM_TASKS_PER_NODE"
		v := r.getenv("SLURM_TASKS_PER_NODE")
		counts, err := parseTasksPerNode(v)
		if err != nil {
			r.fail("SLURM_TASKS_PER_NODE=%q is malformed: %v", v, err)
			break
		}
		if w.NodeRank < 0 || w.NodeRank >= len(counts) {
			r.fail("SLURM_NODEID=%d has no entry in SLURM_TASKS_PER_NODE=%q (%d nodes)", w.NodeRank, v, len(counts))
			break
		}
		w.LocalSize = counts[w.NodeRank]
	default:
		w.LocalSize, r.localSize = w.Size, "SLURM_NTASKS"
	}
	r.master(&w)
	if w.MasterAddr == "" && w.Size > 1 {
		for _, name := range []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
			if v := r.getenv(name); v != "" {
				host, err := firstHost(v)
				if err != nil {
					r.fail("%s=%q is malformed: %v", name, v, err)
				}
				w.MasterAddr = host
				break
			}
		}
	}
	job := r.getenv("SLURM_JOB_ID")
	if job == "" {
		job = r.getenv("SLURM_JOBID")
	}
	if w.MasterPort == 0 && w.Size > 1 && job != "" {
		id, err := strconv.ParseUint(job, 10, 64)
		if err != nil {
			r.fail("SLURM_JOB_ID=%q is not an integer", job)
		}
		w.MasterPort = 20000 + int(id%10000)
	}
	w.JobID = job
	if step := r.getenv("SLURM_STEP_ID"); step != "" && job != "" {
		w.JobID = job + "." + step
	}
	return w
}

// check validates w naming the variables it was read from.
func (r *envReader) check(w World) error {
	get := func(name string) string { return r.getenv(name) }
	switch {
	case w.Size < 1:
		return fmt.Errorf("dist: %s=%s must be at least 1", r.size, get(r.size))
	case w.Rank < 0 || w.Rank >= w.Size:
		return fmt.Errorf("dist: %s=%d must be in 0..%d (%s=%d)", r.rank, w.Rank, w.Size-1, r.size, w.Size)
	case w.LocalSize < 1 || w.LocalSize > w.Size:
		return fmt.Errorf("dist: %s=%s must be in 1..%d (%s=%d)", r.localSize, get(r.localSize), w.Size, r.size, w.Size)
	case w.LocalRank < 0 || w.LocalRank >= w.LocalSize:
		return fmt.Errorf("dist: %s=%d must be in 0..%d (local size %d)", r.localRank, w.LocalRank, w.LocalSize-1, w.LocalSize)
	case w.Nodes < 1 || w.Nodes > w.Size:
		return fmt.Errorf("dist: %s=%d must be in 1..%d (%s=%d)", r.nodes, w.Nodes, w.Size, r.size, w.Size)
	case w.NodeRank < 0 || w.NodeRank >= w.Nodes:
		return fmt.Errorf("dist: %s=%d must be in 0..%d (%d nodes)", r.nodeRank, w.NodeRank, w.Nodes-1, w.Nodes)
	}
	if w.Size > 1 {
		hint := ""
		if w.Source == "openmpi" {
			hint = "; Open MPI does not give rank 0's address: export it, e.g. mpirun -x MASTER_ADDR=host0 -x MASTER_PORT=29500"
		}
		if w.MasterAddr == "" {
			return fmt.Errorf("dist: MASTER_ADDR is not set (%s=%d needs rank 0's address%s)", r.size, w.Size, hint)
		}
		if w.MasterPort == 0 {
			return fmt.Errorf("dist: MASTER_PORT is not set (%s=%d needs rank 0's port%s)", r.size, w.Size, hint)
		}
	}
	return nil
}

// parseTasksPerNode expands Slurm's SLURM_TASKS_PER_NODE, a comma-separated
// list of counts each optionally repeated: "4(x2),3" is [4 4 3].
func parseTasksPerNode(v string) ([]int, error) {
	var counts []int
	for _, item := range strings.Split(v, ",") {
		count, rep := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			if !strings.HasSuffix(item, ")") || !strings.HasPrefix(item[i+1:], "x") {
				return nil, fmt.Errorf("%q is not N or N(xM)", item)
			}
			count, rep = item[:i], item[i+2:len(item)-1]
		}
		n, err1 := strconv.Atoi(count)
		m, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || n < 1 || m < 1 {
			return nil, fmt.Errorf("%q is not N or N(xM)", item)
		}
		if len(counts)+m > 1<<16 {
			return nil, fmt.Errorf("too many nodes")
		}
		for range m {
			counts = append(counts, n)
		}
	}
	return counts, nil
}

// firstHost is the first host of a Slurm host list: "gpu[07-08,11],cpu1"
// is gpu07, "rack[1-2]-n[3-4]" is rack1-n3.
func firstHost(list string) (string, error) {
	var b strings.Builder
	s := list
	for s != "" {
		i := strings.IndexAny(s, "[,")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		if s[i] == ',' {
			break
		}
		end := strings.IndexByte(s[i:], ']')
		if end < 0 {
			return "", fmt.Errorf("unclosed [")
		}
		ranges := s[i+1 : i+end]
		first := ranges
		if j := strings.IndexAny(first, ",-"); j >= 0 {
			first = first[:j]
		}
		if first == "" {
			return "", fmt.Errorf("empty range")
		}
		b.WriteString(first)
		s = s[i+end+1:]
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("no host")
	}
	return b.String(), nil
}
