package store

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// touchOnNode writes one byte of every page of buf from a thread pinned to
// the CPUs of NUMA node node, so that Linux's first-touch policy puts the
// pages in that node's memory: a socket's CPU cache then sits next to the
// socket (Moment's per-socket bins are only worth their placement if the
// rows really live there). Best effort: with an unknown node (-1), a
// single-node machine or no permission to pin, the pages go wherever the
// loading thread is, which is still correct.
func touchOnNode(buf []byte, node int) {
	if node < 0 || len(buf) == 0 {
		return
	}
	cpus, err := nodeCPUs(node)
	if err != nil || len(cpus) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread is pinned and never unlocked: when this goroutine
		// ends, the runtime retires the thread with its changed
		// affinity instead of reusing it.
		runtime.LockOSThread()
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if unix.SchedSetaffinity(0, &set) != nil {
			return
		}
		page := os.Getpagesize()
		for i := 0; i < len(buf); i += page {
			buf[i] = 0
		}
	}()
	<-done
}

// nodeCPUs lists the CPUs of a NUMA node from sysfs.
func nodeCPUs(node int) ([]int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/node/node%d/cpulist", node))
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(data)))
}

// parseCPUList parses a kernel CPU list such as "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if a < 0 || b < a || b >= 1<<16 {
			return nil, fmt.Errorf("cpu list %q: bad range %s", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
