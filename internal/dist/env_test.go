package dist

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vars is a getenv over "NAME=value" pairs.
func vars(kv ...string) func(string) string {
	m := map[string]string{}
	for _, s := range kv {
		name, value, _ := strings.Cut(s, "=")
		m[name] = value
	}
	return func(name string) string { return m[name] }
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want World
	}{
		{"nothing", nil, World{Size: 1, LocalSize: 1, Nodes: 1}},
		{"unrelated", []string{"HOME=/root", "LOCAL_RANK=3"}, World{Size: 1, LocalSize: 1, Nodes: 1}},
		{"torchrun one node",
			[]string{"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=5", "LOCAL_WORLD_SIZE=8", "GROUP_RANK=0", "GROUP_WORLD_SIZE=1",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=abc"},
			World{Rank: 5, Size: 8, LocalRank: 5, LocalSize: 8, Nodes: 1, MasterAddr: "127.0.0.1", MasterPort: 29500, Source: "torchrun", JobID: "abc"}},
		{"torchrun two nodes, no GROUP_WORLD_SIZE",
			[]string{"RANK=11", "WORLD_SIZE=16", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=8", "GROUP_RANK=1",
				"MASTER_ADDR=node0", "MASTER_PORT=1234"},
			World{Rank: 11, Size: 16, LocalRank: 3, LocalSize: 8, NodeRank: 1, Nodes: 2, MasterAddr: "node0", MasterPort: 1234, Source: "torchrun"}},
		{"torchrun one rank needs no master",
			[]string{"RANK=0", "WORLD_SIZE=1"},
			World{Size: 1, LocalSize: 1, Nodes: 1, Source: "torchrun"}},
		{"torch.distributed.launch: no LOCAL_WORLD_SIZE",
			[]string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2"},
			World{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Nodes: 1, MasterAddr: "h", MasterPort: 2, Source: "torchrun"}},
		{"golf's launcher",
			[]string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=0", "GROUP_WORLD_SIZE=1",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT=40000", "GOLF_LAUNCHED=1", "GOLF_JOB_ID=j1", "TORCHELASTIC_RUN_ID=other"},
			World{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Nodes: 1, MasterAddr: "127.0.0.1", MasterPort: 40000, Source: "golf", JobID: "j1"}},
		{"torchrun wins over Slurm and Open MPI",
			[]string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=a", "MASTER_PORT=3",
				"SLURM_PROCID=0", "SLURM_NTASKS=8", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4"},
			World{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Nodes: 1, MasterAddr: "a", MasterPort: 3, Source: "torchrun"}},
		{"slurm, tasks per node given",
			[]string{"SLURM_PROCID=6", "SLURM_NTASKS=8", "SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=4", "SLURM_NODEID=1",
				"SLURM_NNODES=2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0"},
			World{Rank: 6, Size: 8, LocalRank: 2, LocalSize: 4, NodeRank: 1, Nodes: 2, MasterAddr: "10.0.0.1", MasterPort: 29500, Source: "slurm", JobID: "4242.0"}},
		{"slurm, SLURM_TASKS_PER_NODE and a derived master",
			[]string{"SLURM_PROCID=9", "SLURM_NTASKS=11", "SLURM_LOCALID=1", "SLURM_TASKS_PER_NODE=4(x2),3", "SLURM_NODEID=2",
				"SLURM_NNODES=3", "SLURM_JOB_NODELIST=gpu[07-08,11]", "SLURM_JOB_ID=123456"},
			World{Rank: 9, Size: 11, LocalRank: 1, LocalSize: 3, NodeRank: 2, Nodes: 3, MasterAddr: "gpu07", MasterPort: 23456, Source: "slurm", JobID: "123456"}},
		{"slurm one task",
			[]string{"SLURM_PROCID=0", "SLURM_NTASKS=1"},
			World{Size: 1, LocalSize: 1, Nodes: 1, Source: "slurm"}},
		{"open mpi",
			[]string{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
				"MASTER_ADDR=host0", "MASTER_PORT=29500", "OMPI_MCA_ess_base_jobid=77"},
			World{Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4, NodeRank: 1, Nodes: 2, MasterAddr: "host0", MasterPort: 29500, Source: "openmpi", JobID: "77"}},
		{"open mpi wins over the allocation's Slurm",
			[]string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
				"MASTER_ADDR=h", "MASTER_PORT=9", "SLURM_PROCID=0", "SLURM_NTASKS=1"},
			World{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Nodes: 1, MasterAddr: "h", MasterPort: 9, Source: "openmpi"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := FromEnv(vars(c.env...))
			require.NoError(t, err)
			assert.Equal(t, c.want, w)
			assert.Equal(t, c.want.Size > 1, w.Distributed())
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	master := []string{"MASTER_ADDR=h", "MASTER_PORT=29500"}
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"rank not below size", append([]string{"RANK=4", "WORLD_SIZE=4", "LOCAL_RANK=0"}, master...), "dist: RANK=4 must be in 0..3 (WORLD_SIZE=4)"},
		{"negative rank", append([]string{"RANK=-1", "WORLD_SIZE=4", "LOCAL_RANK=0"}, master...), "dist: RANK=-1 must be in 0..3"},
		{"non-integer", append([]string{"RANK=one", "WORLD_SIZE=4", "LOCAL_RANK=0"}, master...), `dist: RANK="one" is not an integer`},
		{"non-integer size", append([]string{"RANK=0", "WORLD_SIZE=4x", "LOCAL_RANK=0"}, master...), `dist: WORLD_SIZE="4x" is not an integer`},
		{"zero size", []string{"RANK=0", "WORLD_SIZE=0"}, "dist: WORLD_SIZE=0 must be at least 1"},
		{"rank without size", []string{"RANK=0"}, "dist: WORLD_SIZE is not set"},
		{"local rank not below local size", append([]string{"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"}, master...),
			"dist: LOCAL_RANK=2 must be in 0..1 (local size 2)"},
		{"local size above size", append([]string{"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=8"}, master...),
			"dist: LOCAL_WORLD_SIZE=8 must be in 1..4 (WORLD_SIZE=4)"},
		{"no local rank", append([]string{"RANK=1", "WORLD_SIZE=4"}, master...), "dist: LOCAL_RANK is not set"},
		{"group rank out of range", append([]string{"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=2"}, master...),
			"dist: GROUP_RANK=2 must be in 0..1 (2 nodes)"},
		{"no master addr", []string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_PORT=1"}, "dist: MASTER_ADDR is not set (WORLD_SIZE=2 needs rank 0's address)"},
		{"no master port", []string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h"}, "dist: MASTER_PORT is not set (WORLD_SIZE=2 needs rank 0's port)"},
		{"port out of range", []string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=70000"}, "dist: MASTER_PORT=70000 is out of range (1-65535)"},
		{"port zero", []string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=0"}, "dist: MASTER_PORT=0 is out of range (1-65535)"},
		{"port not a number", []string{"RANK=0", "WORLD_SIZE=1", "MASTER_PORT=http"}, `dist: MASTER_PORT="http" is not an integer`},
		{"slurm rank not below ntasks", append([]string{"SLURM_PROCID=8", "SLURM_NTASKS=8"}, master...), "dist: SLURM_PROCID=8 must be in 0..7 (SLURM_NTASKS=8)"},
		{"slurm no ntasks", []string{"SLURM_PROCID=0"}, "dist: SLURM_NTASKS is not set"},
		{"slurm malformed tasks per node", append([]string{"SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_TASKS_PER_NODE=4(2)"}, master...),
			`dist: SLURM_TASKS_PER_NODE="4(2)" is malformed`},
		{"slurm node id past tasks per node", append([]string{"SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_NNODES=4", "SLURM_NODEID=3", "SLURM_TASKS_PER_NODE=4(x2)"}, master...),
			`dist: SLURM_NODEID=3 has no entry in SLURM_TASKS_PER_NODE="4(x2)" (2 nodes)`},
		{"slurm local id", append([]string{"SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=4", "SLURM_NTASKS_PER_NODE=4", "SLURM_NNODES=2"}, master...),
			"dist: SLURM_LOCALID=4 must be in 0..3 (local size 4)"},
		{"slurm no address to derive", []string{"SLURM_PROCID=1", "SLURM_NTASKS=2"}, "dist: MASTER_ADDR is not set (SLURM_NTASKS=2 needs rank 0's address)"},
		{"open mpi no master", []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
			"dist: MASTER_ADDR is not set (OMPI_COMM_WORLD_SIZE=2 needs rank 0's address; Open MPI does not give rank 0's address"},
		{"open mpi rank", append([]string{"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"}, master...), "dist: OMPI_COMM_WORLD_RANK=2 must be in 0..1 (OMPI_COMM_WORLD_SIZE=2)"},
		{"open mpi local rank", append([]string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=x"}, master...),
			`dist: OMPI_COMM_WORLD_LOCAL_RANK="x" is not an integer`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromEnv(vars(c.env...))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestEnvRoundTrips(t *testing.T) {
	for _, w := range []World{
		{Rank: 3, Size: 4, LocalRank: 3, LocalSize: 4, Nodes: 1, MasterAddr: "127.0.0.1", MasterPort: 29500, Source: "golf", JobID: "x"},
		{Rank: 13, Size: 16, LocalRank: 5, LocalSize: 8, NodeRank: 1, Nodes: 2, MasterAddr: "node0", MasterPort: 1, Source: "torchrun"},
		{Rank: 0, Size: 1, LocalSize: 1, Nodes: 1, Source: "torchrun"},
	} {
		got, err := FromEnv(vars(w.Env()...))
		require.NoError(t, err)
		assert.Equal(t, w, got)
	}
	assert.Equal(t, []string{"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1", "GROUP_WORLD_SIZE=2",
		"MASTER_ADDR=h", "MASTER_PORT=5"},
		World{Rank: 2, Size: 4, LocalSize: 2, NodeRank: 1, Nodes: 2, MasterAddr: "h", MasterPort: 5, Source: "torchrun"}.Env())
}

func TestSlurmHelpers(t *testing.T) {
	for in, want := range map[string][]int{"4": {4}, "4(x2),3": {4, 4, 3}, "1,2(x3)": {1, 2, 2, 2}} {
		got, err := parseTasksPerNode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "x", "4(x0)", "4(x2", "0", "4(y2)"} {
		_, err := parseTasksPerNode(in)
		assert.Error(t, err, in)
	}
	for in, want := range map[string]string{
		"node1": "node1", "node1,node2": "node1", "gpu[07-08,11]": "gpu07", "gpu[3,5]x,cpu1": "gpu3x",
		"rack[1-2]-n[3-4]": "rack1-n3", "a[10-12],b": "a10",
	} {
		got, err := firstHost(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "gpu[1-2", "[]"} {
		_, err := firstHost(in)
		assert.Error(t, err, in)
	}
}

func TestLaunchOptionsValidate(t *testing.T) {
	args := []string{"golf", "train"}
	for _, c := range []struct {
		o    LaunchOptions
		want string
	}{
		{LaunchOptions{NProcPerNode: 0, Args: args}, "dist: --nproc-per-node=0 must be at least 1"},
		{LaunchOptions{NProcPerNode: 2, Nodes: -1, Args: args}, "dist: --nnodes=-1 must be at least 1"},
		{LaunchOptions{NProcPerNode: 2, Nodes: 2, NodeRank: 2, MasterAddr: "h", MasterPort: 1, Args: args}, "dist: --node-rank=2 must be in 0..1 (--nnodes=2)"},
		{LaunchOptions{NProcPerNode: 2, NodeRank: -1, Args: args}, "dist: --node-rank=-1 must be in 0..0 (--nnodes=1)"},
		{LaunchOptions{NProcPerNode: 2, Nodes: 2, MasterPort: 1, Args: args}, "dist: --master-addr is required with --nnodes=2"},
		{LaunchOptions{NProcPerNode: 2, Nodes: 2, MasterAddr: "h", Args: args}, "dist: --master-port is required with --nnodes=2"},
		{LaunchOptions{NProcPerNode: 2, MasterPort: 65536, Args: args}, "dist: --master-port=65536 is out of range"},
		{LaunchOptions{NProcPerNode: 2}, "dist: no command to launch"},
	} {
		err := c.o.Validate()
		require.Error(t, err, "%+v", c.o)
		assert.Contains(t, err.Error(), c.want)
	}
	ws, err := LaunchOptions{NProcPerNode: 4, Nodes: 2, NodeRank: 1, MasterAddr: "node0", MasterPort: 29500, Args: args}.Worlds()
	require.NoError(t, err)
	require.Len(t, ws, 4)
	assert.Equal(t, World{Rank: 6, Size: 8, LocalRank: 2, LocalSize: 4, NodeRank: 1, Nodes: 2, MasterAddr: "node0", MasterPort: 29500, Source: "golf"}, ws[2])
	ws, err = LaunchOptions{NProcPerNode: 2, Args: args}.Worlds()
	require.NoError(t, err)
	assert.Equal(t, World{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Nodes: 1, MasterAddr: "127.0.0.1", Source: "golf"}, ws[1])
}
