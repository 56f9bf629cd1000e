package cuda

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLibrary is a compiled library for arch and elem whose every kernel
// has the launch bounds of its table entry and modest resources.
func fakeLibrary(arch, elem string) []*CompiledFile {
	byFile := map[string]*CompiledFile{}
	for _, k := range Kernels {
		f := byFile[k.File]
		if f == nil {
			f = &CompiledFile{File: k.File, Arch: arch, Elem: elem, Kernels: map[string]Resources{}}
			byFile[k.File] = f
		}
		for _, fl := range Flavours {
			f.Kernels[k.Name(fl, elem)] = Resources{Registers: 40, MaxThreads: LaunchFor(k, fl, elem).Threads, StaticShared: 1024}
		}
	}
	var out []*CompiledFile
	for _, name := range KernelFiles() {
		out = append(out, byFile[name])
	}
	return out
}

func TestReportAcceptsTheRegistry(t *testing.T) {
	files := append(fakeLibrary("sm_80", "bfloat"), fakeLibrary("sm_90", "float")...)
	rows, err := Report(files)
	require.NoError(t, err)
	assert.Len(t, rows, 2*len(Kernels)*len(Flavours))
	SortRows(rows)
	var buf bytes.Buffer
	require.NoError(t, WriteReport(&buf, rows))
	out := buf.String()
	assert.Contains(t, out, "gemm_tc_bfloat")
	// The tc row of a portable-only kernel names the portable function.
	assert.Regexp(t, `rmsnorm_fwd +tc +bfloat +sm_80 += rmsnorm_fwd_portable_bfloat`, out)
	assert.Equal(t, 1+len(rows), strings.Count(out, "\n"))
}

// Planted violations of the registry and launch-table rules.
func TestReportRejects(t *testing.T) {
	files := fakeLibrary("sm_86", "half")
	rms := files[indexOf(KernelFiles(), "rmsnorm")]
	delete(rms.Kernels, "rmsnorm_bwd_portable_half")
	rms.Kernels["rmsnorm_extra_portable_half"] = Resources{Registers: 8, MaxThreads: 256}
	att := files[indexOf(KernelFiles(), "attention")]
	att.Kernels["attention_fwd_tc_half"] = Resources{Registers: 40, MaxThreads: 256}
	lin := files[indexOf(KernelFiles(), "linear")]
	lin.Kernels["gemm_tc_half"] = Resources{Registers: 40, MaxThreads: 128, SpillStores: 4}
	ce := files[indexOf(KernelFiles(), "softcap_ce")]
	ce.Kernels["softcap_ce_fwd_portable_half"] = Resources{Registers: 40, MaxThreads: 256, NoReport: "no ptxas report in the compile log"}
	_, err := Report(files)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "sm_86 half: the library is not the registry: missing [rmsnorm_bwd_portable_half], not registered [rmsnorm_extra_portable_half]")
	assert.Contains(t, msg, "attention_fwd_tc_half on sm_86: launch bounds 256, the launch table says 128 threads")
	assert.Contains(t, msg, "gemm_tc_half on sm_86: spills registers")
	assert.Contains(t, msg, "softcap_ce_fwd_portable_half on sm_86: spills unknown: no ptxas report in the compile log")

	_, err = Report(fakeLibrary("sm_61", "float"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "architecture sm_61: no limits known")
}

// The backend's start-up notes: one line for the kernels that spill and
// one for those without a usable ptxas report, each naming the first; none
// for a library without either.
func TestResourceNotes(t *testing.T) {
	assert.Empty(t, resourceNotes(fakeLibrary("sm_90", "half")))
	files := fakeLibrary("sm_80", "half")
	att := files[indexOf(KernelFiles(), "attention")]
	r := att.Kernels["attention_fwd_tc_half"]
	r.SpillStores, r.SpillLoads = 4, 4
	att.Kernels["attention_fwd_tc_half"] = r
	r = att.Kernels["attention_dq_tc_half"]
	r.SpillLoads = 8
	att.Kernels["attention_dq_tc_half"] = r
	ce := files[indexOf(KernelFiles(), "softcap_ce")]
	r = ce.Kernels["softcap_ce_fwd_portable_half"]
	r.NoReport = "no ptxas report in the compile log"
	ce.Kernels["softcap_ce_fwd_portable_half"] = r
	notes := resourceNotes(files)
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], "cuda: 2 kernels spill registers with this NVRTC")
	assert.Contains(t, notes[0], "attention_dq_tc_half on sm_80: 0 bytes stores, 8 bytes loads")
	assert.Contains(t, notes[1], "cuda: ptxas's report of 1 kernels was not usable")
	assert.Contains(t, notes[1], "softcap_ce_fwd_portable_half: no ptxas report in the compile log")
}

func TestLibraryJobs(t *testing.T) {
	jobs := LibraryJobs([]string{"sm_80", "sm_90"}, []string{"float", "bfloat"})
	assert.Len(t, jobs, 2*2*len(KernelFiles()))
	assert.Equal(t, Job{"adam", "sm_80", "float"}, jobs[0])
	assert.Equal(t, Job{"softcap_ce", "sm_90", "bfloat"}, jobs[len(jobs)-1])
}

func TestParseArchs(t *testing.T) {
	a, err := ParseArchs(" sm_80,sm_90a ,,sm_100")
	require.NoError(t, err)
	assert.Equal(t, []string{"sm_80", "sm_90a", "sm_100"}, a)
	for _, bad := range []string{"80", "sm_", "compute_80", "sm_8x", ","} {
		_, err := ParseArchs(bad)
		assert.Error(t, err, bad)
	}
}

func TestKernelFilesExist(t *testing.T) {
	for _, f := range KernelFiles() {
		p, err := FileProgram(f)
		require.NoError(t, err)
		// The prelude, directly or through the row code (which includes it).
		assert.True(t, strings.Contains(p.Source, `#include "golf_prelude.cuh"`) ||
			strings.Contains(p.Source, `#include "golf_rows.cuh"`), f)
		assert.Len(t, p.Headers, 3)
	}
	_, err := FileProgram("nope")
	assert.Error(t, err)
}
