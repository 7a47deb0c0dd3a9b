// Command cniburst runs a network list on many pods at once through the
// reference Go library as Debian packages it (libcni, golang-github-appc-cni-dev
// 1.1.2), as a container runtime does on a busy node. bench/process/burst.sh
// and bench/process/churn.sh drive it.
//
// Build (GOPATH mode): GO111MODULE=off GOPATH=<repo>/bench/go:/usr/share/gocode go build cniburst
//
// Usage:
//
//	cniburst netns add|del PREFIX N
//	    creates (removes) the network namespaces /run/netns/PREFIX-0 .. -N-1
//	cniburst burst --conflist F --cni-path D --cache-dir C --prefix P --n N [--cap-args JSON]
//	    (in --cap-args, @PORT@ stands for a host port of the pod's own)
//	    N ADDs of the list started together, one pod per namespace P-i, then
//	    N DELs together; prints one JSON object:
//	    {"add": [ms per pod], "del": [ms per pod], "add_makespan": ms,
//	     "del_makespan": ms, "errors": ["..."]}
//	cniburst churn --conflist F --cni-path D --cache-dir C --prefix P
//	    --present 110 --cycles 10000 --inflight 20 [--status-every 5s]
//	    [--gc-every 60s] [--cap-args JSON] [--lifecycle 1.1.0]
//	    ADDs P-p0 .. P-p(present-1) and keeps them; then `cycles` ADD+DEL cycles
//	    of other pods, `inflight` at a time, each in a fresh namespace; with
//	    --lifecycle, STATUS of every plugin of the list every status-every and
//	    a GC of the list (the attachments of the present pods and of the
//	    cycles in flight valid, as a runtime knows them) every
//	    gc-every, at that cniVersion (Debian's libcni 1.1.2 predates both and
//	    reads no 1.1.0 result: the list's ADD and DEL stay at its own version
//	    and cniburst runs STATUS and GC as libcni 1.2 does, plugin by
//	    plugin, in list order, the list's name injected); then DELs
//	    the present pods. Prints one JSON object: {"cycles": [ms per cycle,
//	    in completion order], "status": [ms], "gc": [ms], "errors": [...],
//	    "fds_before": n, "fds_after": n}
//
// Errors do not stop a run: each is recorded (at most 20 kept) and the
// caller decides.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

const netnsDir = "/run/netns"

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "cniburst: "+format+"\n", a...)
	os.Exit(2)
}

// addNetns creates /run/netns/NAME: a new network namespace bind-mounted
// there, made on a thread of its own that is thrown away afterwards.
func addNetns(name string) error {
	path := filepath.Join(netnsDir, name)
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return err
	}
	f.Close()
	done := make(chan error)
	go func() {
		// Never unlocked: the thread ends with the goroutine, so no other
		// goroutine runs in the new namespace.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid())
		done <- syscall.Mount(self, path, "none", syscall.MS_BIND, "")
	}()
	if err := <-done; err != nil {
		os.Remove(path)
		return fmt.Errorf("netns %s: %w", name, err)
	}
	return nil
}

func delNetns(name string) {
	path := filepath.Join(netnsDir, name)
	syscall.Unmount(path, syscall.MNT_DETACH)
	os.Remove(path)
}

type options struct {
	conflist, cniPath, cacheDir, prefix, capArgs, lifecycle string
	n, present, cycles, inflight                            int
	statusEvery, gcEvery                                    time.Duration
}

type runner struct {
	opt  options
	cni  *libcni.CNIConfig
	list *libcni.NetworkConfigList
	mu   sync.Mutex
	errs []string
}

func (r *runner) record(what string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf("%s: %v", what, err))
	}
}

func (r *runner) rt(pod string) *libcni.RuntimeConf {
	var caps map[string]interface{}
	if r.opt.capArgs != "" {
		// "@PORT@" becomes a port of the pod's own (10000 + a hash of its
		// name), so no two pods map the same host port.
		h := 0
		for _, c := range pod {
			h = (h*31 + int(c)) % 50000
		}
		text := strings.ReplaceAll(r.opt.capArgs, "@PORT@", fmt.Sprint(10000+h))
		if err := json.Unmarshal([]byte(text), &caps); err != nil {
			fail("--cap-args: %v", err)
		}
	}
	return &libcni.RuntimeConf{
		ContainerID:    pod,
		NetNS:          filepath.Join(netnsDir, pod),
		IfName:         "eth0",
		Args:           [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAME", pod}},
		CapabilityArgs: caps,
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// add runs the list's ADD for pod (its namespace already made); the time taken.
func (r *runner) add(pod string) float64 {
	t := time.Now()
	if _, err := r.cni.AddNetworkList(context.Background(), r.list, r.rt(pod)); err != nil {
		r.record("ADD "+pod, err)
	}
	return ms(time.Since(t))
}

func (r *runner) del(pod string) float64 {
	t := time.Now()
	if err := r.cni.DelNetworkList(context.Background(), r.list, r.rt(pod)); err != nil {
		r.record("DEL "+pod, err)
	}
	return ms(time.Since(t))
}

// all runs f on every pod at once; per-pod times and the makespan.
func all(pods []string, f func(string) float64) ([]float64, float64) {
	out := make([]float64, len(pods))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, pod := range pods {
		wg.Add(1)
		go func(i int, pod string) {
			defer wg.Done()
			<-start
			out[i] = f(pod)
		}(i, pod)
	}
	t := time.Now()
	close(start)
	wg.Wait()
	return out, ms(time.Since(t))
}

func (r *runner) burst() map[string]interface{} {
	pods := make([]string, r.opt.n)
	for i := range pods {
		pods[i] = fmt.Sprintf("%s-%d", r.opt.prefix, i)
	}
	add, addSpan := all(pods, r.add)
	del, delSpan := all(pods, r.del)
	return map[string]interface{}{
		"add": add, "del": del, "add_makespan": addSpan, "del_makespan": delSpan,
		"errors": r.errs,
	}
}

// each runs command (STATUS or GC) on every plugin of the list in order,
// with the list's name and cniVersion injected, as libcni 1.2 does.
func (r *runner) each(command string, extra map[string]interface{}) float64 {
	t := time.Now()
	paths := filepath.SplitList(r.opt.cniPath)
	for _, plugin := range r.list.Plugins {
		values := map[string]interface{}{"name": r.list.Name, "cniVersion": r.opt.lifecycle}
		for k, v := range extra {
			values[k] = v
		}
		conf, err := libcni.InjectConf(plugin, values)
		if err != nil {
			r.record(command, err)
			continue
		}
		path, err := invoke.FindInPath(plugin.Network.Type, paths)
		if err != nil {
			r.record(command, err)
			continue
		}
		args := &invoke.Args{Command: command, Path: r.opt.cniPath}
		if err := invoke.ExecPluginWithoutResult(context.Background(), path, conf.Bytes, args, nil); err != nil {
			r.record(command+" "+plugin.Network.Type, err)
		}
	}
	return ms(time.Since(t))
}

func openFds() int {
	entries, _ := os.ReadDir("/proc/self/fd")
	return len(entries)
}

func (r *runner) churn() map[string]interface{} {
	fdsBefore := openFds()
	present := make([]string, r.opt.present)
	for i := range present {
		present[i] = fmt.Sprintf("%s-p%d", r.opt.prefix, i)
		if err := addNetns(present[i]); err != nil {
			fail("%v", err)
		}
	}
	// The present pods arrive 20 at a time, as the cycles run.
	sem := make(chan struct{}, r.opt.inflight)
	var wg sync.WaitGroup
	for _, pod := range present {
		wg.Add(1)
		sem <- struct{}{}
		go func(pod string) {
			defer wg.Done()
			r.add(pod)
			<-sem
		}(pod)
	}
	wg.Wait()

	withLifecycle := r.opt.lifecycle != ""
	// Every pod the runtime knows of is valid for GC: the present ones and
	// those between the start of their ADD and the end of their DEL, as
	// containerd counts a sandbox being made or torn down.
	// A pod registers under gcLock's read side, and a GC holds its write
	// side from its snapshot to its end: no pod the GC does not know of
	// starts meanwhile (its wait is not part of its timed cycle).
	var gcLock sync.RWMutex
	live := map[string]bool{}
	for _, pod := range present {
		live[pod] = true
	}
	valid := func() []map[string]string {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := make([]map[string]string, 0, len(live))
		for pod := range live {
			out = append(out, map[string]string{"containerID": pod, "ifname": "eth0"})
		}
		return out
	}
	var status, gc []float64
	stop := make(chan struct{})
	var pollers sync.WaitGroup
	poll := func(every time.Duration, f func() float64, into *[]float64) {
		defer pollers.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				d := f()
				r.mu.Lock()
				*into = append(*into, d)
				r.mu.Unlock()
			}
		}
	}
	if withLifecycle {
		pollers.Add(2)
		go poll(r.opt.statusEvery, func() float64 { return r.each("STATUS", nil) }, &status)
		go poll(r.opt.gcEvery, func() float64 {
			gcLock.Lock()
			defer gcLock.Unlock()
			return r.each("GC", map[string]interface{}{"cni.dev/valid-attachments": valid()})
		}, &gc)
	}

	cycles := make([]float64, 0, r.opt.cycles)
	for i := 0; i < r.opt.cycles; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			pod := fmt.Sprintf("%s-c%d", r.opt.prefix, i)
			if err := addNetns(pod); err != nil {
				r.record("netns", err)
				return
			}
			gcLock.RLock()
			r.mu.Lock()
			live[pod] = true
			r.mu.Unlock()
			gcLock.RUnlock()
			d := r.add(pod) + r.del(pod)
			delNetns(pod)
			r.mu.Lock()
			delete(live, pod)
			cycles = append(cycles, d)
			r.mu.Unlock()
		}(i)
	}
	wg.Wait()
	close(stop)
	pollers.Wait()

	for _, pod := range present {
		wg.Add(1)
		sem <- struct{}{}
		go func(pod string) {
			defer wg.Done()
			r.del(pod)
			delNetns(pod)
			<-sem
		}(pod)
	}
	wg.Wait()
	return map[string]interface{}{
		"cycles": cycles, "status": status, "gc": gc, "errors": r.errs,
		"fds_before": fdsBefore, "fds_after": openFds(), "lifecycle": withLifecycle,
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: cniburst netns|burst|churn ...")
	}
	if os.Args[1] == "netns" {
		if len(os.Args) != 5 {
			fail("usage: cniburst netns add|del PREFIX N")
		}
		var n int
		fmt.Sscan(os.Args[4], &n)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", os.Args[3], i)
			switch os.Args[2] {
			case "add":
				if err := addNetns(name); err != nil {
					fail("%v", err)
				}
			case "del":
				delNetns(name)
			default:
				fail("netns: add or del, not %q", os.Args[2])
			}
		}
		return
	}
	var o options
	fs := flag.NewFlagSet("cniburst", flag.ExitOnError)
	fs.StringVar(&o.conflist, "conflist", "", "network configuration list")
	fs.StringVar(&o.cniPath, "cni-path", "", "plugin directories")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "libcni cache directory")
	fs.StringVar(&o.prefix, "prefix", "", "namespace and container name prefix")
	fs.StringVar(&o.capArgs, "cap-args", "", "capability arguments, JSON")
	fs.StringVar(&o.lifecycle, "lifecycle", "", "cniVersion of STATUS and GC; none without")
	fs.IntVar(&o.n, "n", 30, "pods in the burst")
	fs.IntVar(&o.present, "present", 110, "pods kept during the churn")
	fs.IntVar(&o.cycles, "cycles", 10000, "ADD/DEL cycles")
	fs.IntVar(&o.inflight, "inflight", 20, "cycles in flight")
	fs.DurationVar(&o.statusEvery, "status-every", 5*time.Second, "STATUS period")
	fs.DurationVar(&o.gcEvery, "gc-every", 60*time.Second, "GC period")
	fs.Parse(os.Args[2:])
	if o.conflist == "" || o.cniPath == "" || o.cacheDir == "" || o.prefix == "" {
		fail("--conflist, --cni-path, --cache-dir and --prefix are required")
	}
	list, err := libcni.ConfListFromFile(o.conflist)
	if err != nil {
		fail("%v", err)
	}
	r := &runner{opt: o, list: list,
		cni: libcni.NewCNIConfigWithCacheDir(filepath.SplitList(o.cniPath), o.cacheDir, nil)}
	var out map[string]interface{}
	switch os.Args[1] {
	case "burst":
		out = r.burst()
	case "churn":
		out = r.churn()
	default:
		fail("unknown command %q", os.Args[1])
	}
	for _, k := range []string{"add", "del"} {
		if v, ok := out[k].([]float64); ok {
			sort.Float64s(v)
		}
	}
	if out["errors"] == nil {
		out["errors"] = []string{}
	}
	b, _ := json.Marshal(out)
	fmt.Println(strings.TrimSpace(string(b)))
}
