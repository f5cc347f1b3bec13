package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/PID/stat. It is 100 on every Linux architecture Go supports.
const ClockTicks = 100

// Mem is a process's resident memory, from /proc/PID/status.
type Mem struct {
	RSS  int64 // VmRSS, bytes
	Peak int64 // VmHWM, the peak resident set, bytes
}

// ParseStatus reads VmRSS and VmHWM from the text of /proc/PID/status.
// A field that is missing reads as 0; a field that is malformed is an error.
func ParseStatus(data []byte) (Mem, error) {
	var m Mem
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return Mem{}, fmt.Errorf("/proc status: %s: unexpected %q", name, strings.TrimSpace(val))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Mem{}, fmt.Errorf("/proc status: %s: %v", name, err)
		}
		*dst = kb << 10
	}
	return m, sc.Err()
}

// ParseStat returns the user and system CPU time (utime + stime, fields 14
// and 15) from the text of /proc/PID/stat. The command name (field 2) may
// hold spaces and parentheses, so fields are counted from its last ')'.
func ParseStat(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / ClockTicks, nil
}

// ParseLoadavg returns the 1-, 5- and 15-minute load averages from the text
// of /proc/loadavg.
func ParseLoadavg(data []byte) ([3]float64, error) {
	var l [3]float64
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return l, fmt.Errorf("/proc/loadavg: %q", data)
	}
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return l, fmt.Errorf("/proc/loadavg: %v", err)
		}
		l[i] = v
	}
	return l, nil
}

// ParseMeminfo returns MemTotal in bytes from the text of /proc/meminfo.
func ParseMeminfo(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemTotal" {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/meminfo: MemTotal: unexpected %q", strings.TrimSpace(val))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo: %v", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/meminfo: no MemTotal")
}

// procMem reads a process's memory; zero values when /proc is unavailable.
func procMem(pid int) Mem {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}
	}
	m, _ := ParseStatus(b)
	return m
}

// procCPU reads a process's CPU time; 0 when /proc is unavailable. pid 0
// means this process.
func procCPU(pid int) time.Duration {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	d, _ := ParseStat(b)
	return d
}

// loadavg reads the machine's load averages; zeros when unavailable.
func loadavg() [3]float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return [3]float64{}
	}
	l, _ := ParseLoadavg(b)
	return l
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	n, _ := ParseMeminfo(b)
	return n
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ParseCPUBusy returns the machine's busy CPU time (user, nice, system,
// irq, softirq and steal; not idle or iowait) from the first line of
// /proc/stat. Guest time is already inside user and nice.
func ParseCPUBusy(data []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / ClockTicks, nil
}

// machineBusy reads the machine's busy CPU time; 0 when unavailable.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	d, _ := ParseCPUBusy(b)
	return d
}
