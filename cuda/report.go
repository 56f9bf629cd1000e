package cuda

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// CompiledFile is one kernel file compiled for one architecture and
// element type: the cubin, NVRTC's log, and the resources of each kernel
// in it (KernelResources).
type CompiledFile struct {
	File, Arch, Elem string
	CUBIN            []byte
	Log              string
	Kernels          map[string]Resources
	Cached           bool // read from the Cache, not compiled
}

// Job is one compile: a kernel file for an architecture and element type.
type Job struct{ File, Arch, Elem string }

// LibraryJobs lists the compiles of the whole library for archs × elems:
// every kernel file, once per architecture and element type.
func LibraryJobs(archs, elems []string) []Job {
	var jobs []Job
	for _, a := range archs {
		for _, e := range elems {
			for _, f := range KernelFiles() {
				jobs = append(jobs, Job{f, a, e})
			}
		}
	}
	return jobs
}

// Row is one line of the kernel report: a registry kernel in one flavour,
// element type and architecture, the function that runs for it (its
// Compiled flavour's), that function's resources, and the launch the host
// uses.
type Row struct {
	Kernel    Kernel
	Flavour   Flavour
	Elem      string
	Arch      string
	Function  string
	Resources Resources
	Launch    Launch
}

// Label is the kernel's <op>[_<dir>].
func (r Row) Label() string {
	if r.Kernel.Dir == "" {
		return r.Kernel.Op
	}
	return r.Kernel.Op + "_" + r.Kernel.Dir
}

// Report checks compiled files against the registry and the launch table
// and returns one row per kernel × flavour × element type × architecture
// compiled. The error joins every problem found:
//   - the functions of the files of an (architecture, element type) are
//     not exactly HostNames(elem) (a kernel missing from the sources, or
//     one the registry lacks);
//   - a kernel's launch bounds differ from its table entry's Threads;
//   - a launch does not fit its kernel on the architecture (CheckFit:
//     spills, threads, registers, shared memory);
//   - ptxas's report of a kernel is missing or disagrees with its cubin
//     (NoReport), so its spills are unknown.
func Report(files []*CompiledFile) ([]Row, error) {
	type ae struct{ arch, elem string }
	byFile := map[Job]*CompiledFile{}
	funcs := map[ae]map[string]bool{}
	var order []ae
	for _, f := range files {
		byFile[Job{f.File, f.Arch, f.Elem}] = f
		key := ae{f.Arch, f.Elem}
		if funcs[key] == nil {
			funcs[key] = map[string]bool{}
			order = append(order, key)
		}
		for name := range f.Kernels {
			funcs[key][name] = true
		}
	}
	var rows []Row
	var errs []error
	for _, key := range order {
		limits, err := Limits(key.arch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		want := map[string]bool{}
		for _, n := range HostNames(key.elem) {
			want[n] = true
		}
		var missing, extra []string
		for n := range want {
			if !funcs[key][n] {
				missing = append(missing, n)
			}
		}
		for n := range funcs[key] {
			if !want[n] {
				extra = append(extra, n)
			}
		}
		if len(missing) > 0 || len(extra) > 0 {
			sort.Strings(missing)
			sort.Strings(extra)
			errs = append(errs, fmt.Errorf("%s %s: the library is not the registry: missing %v, not registered %v",
				key.arch, key.elem, missing, extra))
		}
		for _, k := range Kernels {
			f := byFile[Job{k.File, key.arch, key.elem}]
			if f == nil {
				continue
			}
			for _, fl := range Flavours {
				name := k.Name(fl, key.elem)
				res, ok := f.Kernels[name]
				if !ok {
					continue // reported above
				}
				l := LaunchFor(k, fl, key.elem)
				rows = append(rows, Row{k, fl, key.elem, key.arch, name, res, l})
				if fl != k.Compiled(fl, key.elem) {
					continue // the same function as another row: checked there
				}
				if res.MaxThreads != l.Threads {
					errs = append(errs, fmt.Errorf("%s on %s: launch bounds %d, the launch table says %d threads",
						name, key.arch, res.MaxThreads, l.Threads))
				}
				if err := CheckFit(name, res, l, limits); err != nil {
					errs = append(errs, err)
				}
				if res.NoReport != "" {
					errs = append(errs, fmt.Errorf("%s on %s: spills unknown: %s", name, key.arch, res.NoReport))
				}
			}
		}
	}
	return rows, errors.Join(errs...)
}

// WriteReport prints the rows as a table: the kernel, flavour, element
// type and architecture; the function that runs; its registers, spill
// bytes (stores+loads), stack frame, static shared memory and launch
// bounds; and the launch the host uses (threads, dynamic shared memory,
// grid).
func WriteReport(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tflavour\tdtype\tarch\tfunction\tregs\tspill B\tstack B\tsmem B\tbounds\t| threads\tdyn smem B\tgrid")
	for _, r := range rows {
		fn := r.Function
		if r.Flavour != r.Kernel.Compiled(r.Flavour, r.Elem) {
			fn = "= " + fn // the tc name resolves to the portable function
		}
		bounds := "-"
		if r.Resources.MaxThreads > 0 {
			bounds = fmt.Sprint(r.Resources.MaxThreads)
		}
		spill, stack := "?", "?" // no ptxas report
		if r.Resources.NoReport == "" {
			spill = fmt.Sprint(r.Resources.SpillStores + r.Resources.SpillLoads)
			stack = fmt.Sprint(r.Resources.StackFrame)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t| %d\t%d\t%s\n",
			r.Label(), r.Flavour, r.Elem, r.Arch, fn, r.Resources.Registers, spill, stack,
			r.Resources.StaticShared, bounds, r.Launch.Threads, r.Launch.DynamicShared, r.Launch.Grid)
	}
	return tw.Flush()
}

// SortRows orders rows by kernel, flavour, element type, then architecture.
func SortRows(rows []Row) {
	elemRank := map[string]int{}
	for i, e := range ElemTypes {
		elemRank[e] = i
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Label() != b.Label() {
			return a.Label() < b.Label()
		}
		if a.Flavour != b.Flavour {
			return a.Flavour < b.Flavour
		}
		if a.Elem != b.Elem {
			return elemRank[a.Elem] < elemRank[b.Elem]
		}
		return strings.Compare(a.Arch, b.Arch) < 0
	})
}

// resourceNotes describes the kernels that spill registers and those whose
// ptxas report was not used (Resources.NoReport): a line for each kind
// with the count and the first kernel, in file order, or none. Neither
// stops the backend (CheckLaunch); `golf kernels` fails on both.
func resourceNotes(files []*CompiledFile) []string {
	var spills, unknown int
	var firstSpill, firstUnknown string
	for _, f := range files {
		names := make([]string, 0, len(f.Kernels))
		for k := range f.Kernels {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			r := f.Kernels[k]
			if r.NoReport != "" {
				if unknown == 0 {
					firstUnknown = k + ": " + r.NoReport
				}
				unknown++
			}
			if r.SpillStores > 0 || r.SpillLoads > 0 {
				if spills == 0 {
					firstSpill = fmt.Sprintf("%s on %s: %d bytes stores, %d bytes loads", k, f.Arch, r.SpillStores, r.SpillLoads)
				}
				spills++
			}
		}
	}
	var notes []string
	if spills > 0 {
		notes = append(notes, fmt.Sprintf("cuda: %d kernels spill registers with this NVRTC, which costs speed (%s); `golf kernels --backend cuda` lists them", spills, firstSpill))
	}
	if unknown > 0 {
		notes = append(notes, fmt.Sprintf("cuda: ptxas's report of %d kernels was not usable, their spills are unknown (%s); `golf kernels --backend cuda` lists them", unknown, firstUnknown))
	}
	return notes
}
