//go:build e2e

package e2e

// What the harness's processes cost, read from /proc: CPU seconds and peak RSS by process
// name, the load average and the machine the figures come from.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// procCost is one process's CPU seconds (with its reaped children's) and peak RSS.
type procCost struct {
	name    string
	cpu     float64 // seconds
	peakMiB float64
}

// childCosts reads, for every live child of the test process (the harness's processes,
// envtest's kube-apiserver and etcd), the CPU seconds it and its reaped children have
// used and its peak RSS (VmHWM), by process name.
func childCosts() map[string]procCost {
	out := map[string]procCost{}
	dirs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || parentOf(pid) != self {
			continue
		}
		own, reaped := cpuSecondsOf(pid)
		name := processName(pid)
		c := out[name]
		c.name = name
		c.cpu += own + reaped
		c.peakMiB = max(c.peakMiB, peakRSSMiBOf(pid))
		out[name] = c
	}
	return out
}

// statFields are the fields of /proc/<pid>/stat after the command name (which may hold
// spaces): f[0] is field 3 of proc(5), the state; nil when the process is gone.
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return nil
	}
	return strings.Fields(string(stat[end+1:]))
}

// parentOf is a process's parent's ID (0 when unknown).
func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// cpuSecondsOf is the user+system CPU a process has used itself (utime+stime, fields 14
// and 15) and what its reaped children used (cutime+cstime, 16 and 17).
func cpuSecondsOf(pid int) (own, reaped float64) {
	f := statFields(pid)
	if len(f) < 15 {
		return 0, 0
	}
	ticks := make([]float64, 4)
	for i, v := range f[11:15] {
		ticks[i], _ = strconv.ParseFloat(v, 64)
	}
	return (ticks[0] + ticks[1]) / 100, (ticks[2] + ticks[3]) / 100 // USER_HZ
}

// versionSuffix is the version hack/flux.sh puts in the controllers' file names.
var versionSuffix = regexp.MustCompile(`-v\d+\.\d+\.\d+$`)

// processName is the base name of a process's executable as it was run (Argo CD's
// multi-call binary runs under each command's name; redis-server rewrites its title),
// without a version suffix.
func processName(pid int) string {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	fields := strings.Fields(string(argv0))
	if len(fields) == 0 {
		return strconv.Itoa(pid)
	}
	return versionSuffix.ReplaceAllString(filepath.Base(fields[0]), "")
}

// peakRSSMiBOf is a process's VmHWM in MiB.
func peakRSSMiBOf(pid int) float64 {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// costDelta is each process's CPU between two readings and its peak RSS at the second,
// the processes that used none left out, the largest first.
func costDelta(before, after map[string]procCost) []procCost {
	var out []procCost
	for name, a := range after {
		c := procCost{name: name, cpu: a.cpu - before[name].cpu, peakMiB: a.peakMiB}
		if c.cpu > 0 || c.peakMiB > 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].cpu != out[j].cpu {
			return out[i].cpu > out[j].cpu
		}
		return out[i].name < out[j].name
	})
	return out
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machineSummary names the machine the figures come from: cores, CPU model, memory.
func machineSummary() string {
	model := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	cores := 0
	if out, err := exec.Command("nproc").Output(); err == nil {
		cores, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	return fmt.Sprintf("%d cores (%s), %s RAM, load average %s", cores, model, mem, loadAverage())
}
