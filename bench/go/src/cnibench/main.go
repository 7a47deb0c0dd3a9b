// Command cnibench times, with testing.Benchmark, the operations the Rust
// in-process benchmarks time, using the reference Go library as Debian
// packages it (golang-github-appc-cni-dev, spec 1.0.0: it has no 1.1.0
// result type, so 1.0.0 stands in for 1.1.0 in the conversions).
//
// Build (GOPATH mode): GO111MODULE=off GOPATH=<repo>/bench/go:/usr/share/gocode go build cnibench
// Usage: cnibench FIXTURE_DIR   prints one JSON object: {"operation": ns/op}
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/types/create"
	"github.com/containernetworking/cni/pkg/version"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func read(dir, name string) []byte {
	b, err := os.ReadFile(filepath.Join(dir, name))
	must(err)
	return b
}

func result(version string, b []byte) types.Result {
	r, err := create.Create(version, b)
	must(err)
	return r
}

func nsPerOp(f func(b *testing.B)) float64 {
	r := testing.Benchmark(f)
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

func main() {
	dir := os.Args[1]
	config := read(dir, "config-1.0.0.json")
	r020 := result("0.2.0", read(dir, "result-0.2.0.json"))
	r040 := result("0.4.0", read(dir, "result-0.4.0.json"))
	// Debian's library stops at 1.0.0: the 1.1.0 fixture is read as 1.0.0.
	var raw map[string]interface{}
	must(json.Unmarshal(read(dir, "result-1.1.0.json"), &raw))
	raw["cniVersion"] = "1.0.0"
	b100, _ := json.Marshal(raw)
	r100 := result("1.0.0", b100)

	out := map[string]float64{}
	out["parse config with prevResult (1.0.0)"] = nsPerOp(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var conf types.NetConf
			must(json.Unmarshal(config, &conf))
			must(version.ParsePrevResult(&conf))
		}
	})
	convert := func(r types.Result, to string) func(b *testing.B) {
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, err := r.GetAsVersion(to)
				must(err)
			}
		}
	}
	out["convert 1.1.0 -> 0.2.0"] = nsPerOp(convert(r100, "0.2.0"))
	out["convert 0.2.0 -> 1.1.0"] = nsPerOp(convert(r020, "1.0.0"))
	out["convert 0.4.0 -> 1.0.0"] = nsPerOp(convert(r040, "1.0.0"))
	out["print a 1.0.0 result"] = nsPerOp(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, err := json.MarshalIndent(r100, "", "    ")
			must(err)
		}
	})
	out["dispatch ADD (1.0.0, prevResult passthrough)"] = nsPerOp(dispatchAdd(config))

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	must(enc.Encode(out))
}

// dispatchAdd runs the reference skel's whole ADD path in-process: it reads
// the environment and os.Stdin, checks them, and calls a plugin that parses
// the configuration and prints prevResult in the configuration's version.
func dispatchAdd(config []byte) func(b *testing.B) {
	env := map[string]string{
		"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "bench-container",
		"CNI_NETNS": "/var/run/netns/bench-does-not-exist", "CNI_IFNAME": "eth0", "CNI_PATH": "/opt/cni/bin",
	}
	add := func(args *skel.CmdArgs) error {
		var conf types.NetConf
		if err := json.Unmarshal(args.StdinData, &conf); err != nil {
			return err
		}
		if err := version.ParsePrevResult(&conf); err != nil {
			return err
		}
		return types.PrintResult(conf.PrevResult, conf.CNIVersion)
	}
	return func(b *testing.B) {
		for k, v := range env {
			os.Setenv(k, v)
		}
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		must(err)
		stdout := os.Stdout
		os.Stdout = devnull
		defer func() { os.Stdout = stdout; devnull.Close() }()
		tmp, err := os.CreateTemp("", "cnibench-*.json")
		must(err)
		defer os.Remove(tmp.Name())
		_, err = tmp.Write(config)
		must(err)
		stdin := os.Stdin
		defer func() { os.Stdin = stdin }()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, err := tmp.Seek(0, 0)
			must(err)
			os.Stdin = tmp
			if e := skel.PluginMainWithError(add, add, add, version.All, ""); e != nil {
				must(e)
			}
		}
	}
}
