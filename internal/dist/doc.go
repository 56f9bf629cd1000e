// Package dist places one process in a data-parallel training job and
// connects the job's processes (ranks) to each other on the host side:
// where a rank stands (World, read from the launcher's environment), the
// rendezvous that hands rank 0's NCCL unique id to every rank, a small
// control channel for per-step agreements and failure reports (Group), a
// local launcher in the manner of torchrun's standalone mode (Launch), and
// the reference's rules for splitting a global batch among ranks
// (MicrobatchesPerRank, Span).
//
// # Where a rank stands
//
// FromEnv reads, in this order of precedence, torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), Open MPI's (OMPI_COMM_WORLD_RANK, ..._SIZE,
// ..._LOCAL_RANK, ..._LOCAL_SIZE) and Slurm's (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE,
// SLURM_NODEID, SLURM_NNODES). Open MPI comes before Slurm because mpirun
// inside a Slurm allocation passes the allocation's SLURM_PROCID on to every
// process it starts. See FromEnv for what is derived where a source does
// not say it.
//
// # The rendezvous
//
// Rank 0 listens on MasterPort (on every interface, or on MasterAddr
// itself when that is a loopback address) and every other rank dials
// MasterAddr:MasterPort, retrying until the join timeout. The
// connection starts with a hello: the magic "golfdist", the protocol
// version (ProtocolVersion), the rank, the world size and the job id
// (World.JobID: GOLF_JOB_ID, torchrun's TORCHELASTIC_RUN_ID, Slurm's
// SLURM_JOB_ID.SLURM_STEP_ID or Open MPI's job id), so that the ranks of two
// jobs that use one port do not mix. Rank 0 refuses, with a reason the
// refused rank reports, a hello of another version, job or size, a rank out
// of range and a rank that has already joined. When all Size-1 other ranks
// have joined it sends each of them the payload it was given (the NCCL
// unique id) and stops listening; the connections stay open as the control
// channel, a star around rank 0. If the join timeout passes first, rank 0
// names the ranks that did not arrive and tells those that did.
//
// Every message is a frame: a 4-byte big-endian length, a 1-byte type and
// the body (integers big-endian, floats as their IEEE 754 bits, strings
// length-prefixed).
//
// # The control channel
//
// A collective (Agree, AllReduceMax, AllReduceSum, Barrier) is a gather to
// rank 0 and a broadcast: every rank sends its values with the collective's
// sequence number, kind and tag (the step, for Agree); rank 0 combines them
// in rank order, so a sum is the same bits on every run, and sends the
// result to every rank. Ranks that disagree on the sequence, kind, tag or
// number of values fail the group: that is a bug in the caller, and a rank
// left waiting would hang.
//
// Abort sends the reason to rank 0, which relays it to every other rank.
// Rank 0 also relays the loss of a connection to another rank, so every
// rank learns of any rank's failure, and Failed delivers the first one. A
// SIGKILLed rank's connection is closed by its kernel, which its peer sees
// at once. A frozen or vanished host is seen by silence: every rank sends a
// heartbeat on each connection every Options.Heartbeat (DefaultHeartbeat,
// 2s) and a connection on which nothing arrives for Options.PeerTimeout
// (DefaultPeerTimeout, 20s) is lost; TCP keepalive is on as well (probes
// after 5s idle, every 5s, 3 of them), for a connection the heartbeat's
// writes cannot tell about. So every
// rank learns of a lost rank within PeerTimeout plus a relay's few
// milliseconds. Close says bye before it closes, so a rank that finishes is
// not reported as failed by ranks that finish a little later.
//
// A collective waits as long as the other ranks are alive: a rank that is
// alive but stuck (in a hung NCCL call, say) is for the trainer's watchdog
// to deal with, not this package.
package dist
