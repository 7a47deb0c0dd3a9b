// Command cniconvert is a conversion oracle backed by the reference Go CNI
// library (github.com/containernetworking/cni, spec types 0.1.0..1.0.0).
//
// It exists so that the Rust result-conversion code is checked against what
// real runtimes and plugins do, not against itself. It is used to (re)compute
// cni-types/tests/fixtures/conversions.json.
//
// Input (stdin): a JSON array of cases
//
//	[{"from": "0.2.0", "to": "0.4.0", "result": {...}}, ...]
//
// Output (stdout): a JSON array with one entry per case, in order
//
//	[{"ok": true, "output": {...}} | {"ok": false, "error": "..."}, ...]
//
// Each case is handled exactly like a runtime or plugin does it:
// create.Create(from, resultBytes), then r.GetAsVersion(to), then
// json.Marshal of the converted result. If "from" is empty the version is
// detected from the result (create.CreateFromBytes).
//
// Build in GOPATH mode (no module needed), e.g. from the repository root:
//
//	GO111MODULE=off GOPATH=$PWD/tests/go:/usr/share/gocode \
//	    go build -o /tmp/cniconvert cniconvert
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/types/create"

	// The version packages register their result creators and converters
	// in init(); runtimes and plugins get them through libcni/invoke/skel.
	_ "github.com/containernetworking/cni/pkg/types/020"
	_ "github.com/containernetworking/cni/pkg/types/040"
	_ "github.com/containernetworking/cni/pkg/types/100"
)

type inputCase struct {
	From   string          `json:"from"`
	To     string          `json:"to"`
	Result json.RawMessage `json:"result"`
}

type outputCase struct {
	OK     bool            `json:"ok"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func convert(c inputCase) (out outputCase) {
	defer func() {
		if p := recover(); p != nil {
			out = outputCase{OK: false, Error: fmt.Sprintf("panic: %v", p)}
		}
	}()

	var (
		r   types.Result
		err error
	)
	if c.From == "" {
		r, err = create.CreateFromBytes(c.Result)
	} else {
		r, err = create.Create(c.From, c.Result)
	}
	if err != nil {
		return outputCase{OK: false, Error: err.Error()}
	}
	converted, err := r.GetAsVersion(c.To)
	if err != nil {
		return outputCase{OK: false, Error: err.Error()}
	}
	data, err := json.Marshal(converted)
	if err != nil {
		return outputCase{OK: false, Error: err.Error()}
	}
	return outputCase{OK: true, Output: data}
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cniconvert: reading stdin: %v\n", err)
		os.Exit(1)
	}
	var cases []inputCase
	if err := json.Unmarshal(in, &cases); err != nil {
		fmt.Fprintf(os.Stderr, "cniconvert: decoding cases: %v\n", err)
		os.Exit(1)
	}
	outs := make([]outputCase, 0, len(cases))
	for _, c := range cases {
		outs = append(outs, convert(c))
	}
	data, err := json.MarshalIndent(outs, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cniconvert: encoding output: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(append(data, '\n'))
}
