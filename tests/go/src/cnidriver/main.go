// Command cnidriver is a minimal CNI *runtime* built on the reference Go
// library (github.com/containernetworking/cni/libcni, as packaged by Debian in
// golang-github-appc-cni-dev). The Rust end-to-end tests use it to drive
// plugins exactly the way a real runtime (containerd, cri-o, ...) would: same
// plugin lookup, same stdin injection (name, cniVersion, prevResult,
// runtimeConfig), same result parsing/version conversion and the same on-disk
// result cache.
//
// Build (GOPATH mode, no modules):
//
//	GO111MODULE=off GOPATH=<repo>/tests/go:/usr/share/gocode go build -o cnidriver cnidriver
//
// Usage:
//
//	cnidriver <add|check|del|addcheckdel> --conflist FILE --cni-path DIRS --cache-dir DIR
//	          [--container-id ID] [--netns PATH] [--ifname NAME]
//	          [--cni-args 'K=V;K2=V2'] [--cap-args JSON]
//	cnidriver version --plugin TYPE --cni-path DIRS [--cni-args 'K=V;K2=V2']
//	cnidriver gc --conflist FILE --cni-path DIRS --cache-dir DIR [--valid-attachments JSON]
//
//	--conflist FILE   network configuration list (.conflist). A single plugin
//	                  configuration (no "plugins" key) is accepted too and is
//	                  wrapped with libcni.ConfListFromConf.
//	--cni-path DIRS   plugin search path, colon separated (becomes CNI_PATH).
//	--cache-dir DIR   libcni cache directory (results are cached in
//	                  DIR/results/<network>-<containerid>-<ifname>).
//	--container-id    CNI_CONTAINERID (default "cnidriver-container").
//	--netns           CNI_NETNS (default "/var/run/netns/cni-test-does-not-exist").
//	--ifname          CNI_IFNAME (default "eth0").
//	--cni-args        CNI_ARGS as 'K=V;K2=V2' (split on ';' then on the first '=');
//	                  passed to libcni as RuntimeConf.Args.
//	--cap-args JSON   JSON object, RuntimeConf.CapabilityArgs.
//	--plugin TYPE     plugin type probed by "version".
//	--valid-attachments JSON
//	                  gc: the runtime's list of valid attachments, a JSON
//	                  array of {"containerID","ifname"} or null (a nil Go
//	                  slice, what a runtime with no live pod on the network
//	                  passes). Without the flag libcni gets no GCArgs and
//	                  sends neither key.
//
// Output: exactly one JSON object on stdout.
//
//	add|check|del, success:
//	  {"ok":true,"command":"add","result":<result or null>,"cachedResult":<result or null>}
//	add|check|del, failure:
//	  {"ok":false,"command":"add","error":ERR,"cachedResult":<result or null>}
//	where
//	  - "result" is the types.Result returned by AddNetworkList marshalled as
//	    libcni holds it (in the version of the LAST plugin's output); always
//	    null for check/del.
//	  - "cachedResult" is GetNetworkListCachedResult after the operation
//	    (converted to the list's cniVersion), null when nothing is cached.
//	    If reading the cache fails, "cachedResultError" holds the message.
//	  - ERR is {"code":N,"msg":"...","details":"...","text":"<err.Error()>"}.
//	    If a *types.Error is anywhere in the error chain (errors.As; libcni
//	    wraps plugin errors as `plugin type="x" name="y" failed (add): ...`)
//	    code/msg/details are that error's fields; otherwise code is -1, msg is
//	    err.Error() and details is "". "text" is always the full err.Error().
//
//	addcheckdel: ADD, then CHECK (only if the list's cniVersion >= 0.4.0,
//	ADD succeeded and disableCheck is not set), then DEL (always, as a
//	runtime cleans up even after a failed ADD):
//	  {"ok":<every step that ran succeeded>,
//	   "add":{"ok":true,"result":R} | {"ok":false,"error":ERR},
//	   "cachedAfterAdd":<result or null>,
//	   "check":{"ok":true} | {"ok":false,"error":ERR} | {"ok":true,"skipped":"<why>"},
//	   "del":{"ok":true} | {"ok":false,"error":ERR},
//	   "cachedAfterDel":<result or null>}
//
//	version (CNIConfig.GetVersionInfo):
//	  {"ok":true,"cniVersion":"...","supportedVersions":["..."]} or
//	  {"ok":false,"error":ERR}
//	  libcni's GetVersionInfo always sends CNI_ARGS="" to the plugin; when
//	  --cni-args is given the driver's exec wrapper substitutes it, so test
//	  doubles that read CNI_ARGS during VERSION (the reference noop's
//	  ReportVersionSupport) can be exercised through libcni's decoding.
//
//	gc: {"ok":true,"command":"gc","sent":[<each plugin's stdin>]} or
//	    {"ok":false,"command":"gc","error":ERR,"sent":[...]}.
//
//	Debian's libcni (1.1.2) predates GC (libcni 1.2.0's
//	CNIConfig.GCNetworkList), so gcNetworkList below does what that
//	function does, with 1.1.2's own pieces (InjectConf, FindInPath,
//	ExecPluginWithoutResult): DEL every cached attachment of the network
//	that the list does not name, then, for cniVersion 1.1.0 and later, run
//	GC on every plugin with name, cniVersion and the list injected under
//	"cni.dev/valid-attachments" and "cni.dev/attachments" exactly as Go
//	marshals it (a nil slice is null).
//
// Exit status: 0 whenever the JSON object was printed (also for plugin
// failures); 2 for driver misuse (bad flags, unreadable files).
//
// The driver passes its own environment through to plugins (libcni does
// os.Environ() + CNI_* variables), so callers should run it with a clean
// environment.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

func usage(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "cnidriver: "+format+"\n", a...)
	fmt.Fprintln(os.Stderr, "usage: cnidriver <add|check|del|version|addcheckdel> --conflist FILE --cni-path DIRS --cache-dir DIR [--container-id ID] [--netns PATH] [--ifname NAME] [--cni-args K=V;K2=V2] [--cap-args JSON] [--plugin TYPE]")
	os.Exit(2)
}

// argsExec wraps libcni's default exec and, when cniArgs is set, overrides
// CNI_ARGS in the plugin environment (used only for "version").
type argsExec struct {
	*invoke.RawExec
	version.PluginDecoder
	cniArgs *string
}

func (e *argsExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	if e.cniArgs != nil {
		out := make([]string, 0, len(environ)+1)
		for _, kv := range environ {
			if !strings.HasPrefix(kv, "CNI_ARGS=") {
				out = append(out, kv)
			}
		}
		environ = append(out, "CNI_ARGS="+*e.cniArgs)
	}
	return e.RawExec.ExecPlugin(ctx, pluginPath, stdinData, environ)
}

func errJSON(err error) map[string]interface{} {
	var te *types.Error
	if errors.As(err, &te) {
		return map[string]interface{}{
			"code":    te.Code,
			"msg":     te.Msg,
			"details": te.Details,
			"text":    err.Error(),
		}
	}
	return map[string]interface{}{
		"code":    -1,
		"msg":     err.Error(),
		"details": "",
		"text":    err.Error(),
	}
}

// resultJSON marshals a types.Result (nil -> JSON null).
func resultJSON(r types.Result) interface{} {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return map[string]interface{}{"marshalError": err.Error()}
	}
	return json.RawMessage(b)
}

func emit(v interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cnidriver: cannot marshal output: %v\n", err)
		os.Exit(3)
	}
	os.Stdout.Write(b)
	os.Stdout.Write([]byte("\n"))
	os.Exit(0)
}

func parseCNIArgs(s string) ([][2]string, error) {
	var out [][2]string
	if s == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ";") {
		kv := strings.SplitN(item, "=", 2)
		if len(kv) != 2 {
			return nil, fmt.Errorf("--cni-args: %q is not K=V", item)
		}
		out = append(out, [2]string{kv[0], kv[1]})
	}
	return out, nil
}

func main() {
	if len(os.Args) < 2 {
		usage("missing command")
	}
	cmd := os.Args[1]
	switch cmd {
	case "add", "check", "del", "addcheckdel", "version", "gc":
	default:
		usage("unknown command %q", cmd)
	}

	fs := flag.NewFlagSet("cnidriver", flag.ContinueOnError)
	conflist := fs.String("conflist", "", "network configuration list file")
	cniPath := fs.String("cni-path", "", "plugin directories, ':' separated")
	cacheDir := fs.String("cache-dir", "", "libcni cache directory")
	containerID := fs.String("container-id", "cnidriver-container", "CNI_CONTAINERID")
	netns := fs.String("netns", "/var/run/netns/cni-test-does-not-exist", "CNI_NETNS")
	ifname := fs.String("ifname", "eth0", "CNI_IFNAME")
	cniArgs := fs.String("cni-args", "", "CNI_ARGS, K=V;K2=V2")
	capArgs := fs.String("cap-args", "", "capability args, JSON object")
	plugin := fs.String("plugin", "", "plugin type (version)")
	validJSON := fs.String("valid-attachments", "", "gc: JSON array or null")
	if err := fs.Parse(os.Args[2:]); err != nil {
		usage("%v", err)
	}
	if fs.NArg() != 0 {
		usage("unexpected arguments %q", fs.Args())
	}
	cniArgsSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "cni-args" {
			cniArgsSet = true
		}
	})
	if *cniPath == "" {
		usage("--cni-path is required")
	}
	paths := strings.Split(*cniPath, string(os.PathListSeparator))

	exec := &argsExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}}
	ctx := context.Background()

	if cmd == "version" {
		if *plugin == "" {
			usage("version needs --plugin")
		}
		if cniArgsSet {
			exec.cniArgs = cniArgs
		}
		cni := libcni.NewCNIConfig(paths, exec)
		info, err := cni.GetVersionInfo(ctx, *plugin)
		if err != nil {
			emit(map[string]interface{}{"ok": false, "error": errJSON(err)})
		}
		var buf bytes.Buffer
		var decoded struct {
			CNIVersion string `json:"cniVersion"`
		}
		if err := info.Encode(&buf); err == nil {
			_ = json.Unmarshal(buf.Bytes(), &decoded)
		}
		emit(map[string]interface{}{
			"ok":                true,
			"cniVersion":        decoded.CNIVersion,
			"supportedVersions": info.SupportedVersions(),
		})
	}

	if *conflist == "" {
		usage("--conflist is required")
	}
	if *cacheDir == "" {
		usage("--cache-dir is required (refusing to use /var/lib/cni)")
	}
	confBytes, err := ioutil.ReadFile(*conflist)
	if err != nil {
		usage("cannot read --conflist: %v", err)
	}

	rt := &libcni.RuntimeConf{
		ContainerID: *containerID,
		NetNS:       *netns,
		IfName:      *ifname,
	}
	if rt.Args, err = parseCNIArgs(*cniArgs); err != nil {
		usage("%v", err)
	}
	if *capArgs != "" {
		if err := json.Unmarshal([]byte(*capArgs), &rt.CapabilityArgs); err != nil {
			usage("--cap-args: %v", err)
		}
	}

	cni := libcni.NewCNIConfigWithCacheDir(paths, *cacheDir, exec)

	// Load the list the way a runtime does; a parse error is reported as
	// JSON (it is libcni's behaviour under test, not driver misuse).
	var list *libcni.NetworkConfigList
	var probe map[string]json.RawMessage
	if json.Unmarshal(confBytes, &probe) == nil && probe["plugins"] == nil {
		var conf *libcni.NetworkConfig
		conf, err = libcni.ConfFromBytes(confBytes)
		if err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	} else {
		list, err = libcni.ConfListFromBytes(confBytes)
	}
	if err != nil {
		emit(map[string]interface{}{"ok": false, "command": cmd, "error": errJSON(err), "cachedResult": nil})
	}

	cached := func(out map[string]interface{}, key string) {
		r, err := cni.GetNetworkListCachedResult(list, rt)
		if err != nil {
			out[key+"Error"] = err.Error()
			out[key] = nil
			return
		}
		out[key] = resultJSON(r)
	}

	single := func(name string) {
		out := map[string]interface{}{"command": name}
		var err error
		var res types.Result
		switch name {
		case "add":
			res, err = cni.AddNetworkList(ctx, list, rt)
		case "check":
			err = cni.CheckNetworkList(ctx, list, rt)
		case "del":
			err = cni.DelNetworkList(ctx, list, rt)
		}
		if err != nil {
			out["ok"] = false
			out["error"] = errJSON(err)
		} else {
			out["ok"] = true
			out["result"] = resultJSON(res)
		}
		cached(out, "cachedResult")
		emit(out)
	}

	if cmd == "gc" {
		var args *gcArgs
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "valid-attachments" {
				args = &gcArgs{}
			}
		})
		if args != nil {
			if err := json.Unmarshal([]byte(*validJSON), &args.ValidAttachments); err != nil {
				usage("--valid-attachments: %v", err)
			}
		}
		sent, err := gcNetworkList(ctx, cni, exec, paths, *cacheDir, list, args)
		out := map[string]interface{}{"command": "gc", "ok": err == nil, "sent": sent}
		if err != nil {
			out["error"] = errJSON(err)
		}
		emit(out)
	}

	if cmd != "addcheckdel" {
		single(cmd)
	}

	out := map[string]interface{}{}
	allOK := true
	step := func(err error) map[string]interface{} {
		if err != nil {
			allOK = false
			return map[string]interface{}{"ok": false, "error": errJSON(err)}
		}
		return map[string]interface{}{"ok": true}
	}

	res, addErr := cni.AddNetworkList(ctx, list, rt)
	add := step(addErr)
	if addErr == nil {
		add["result"] = resultJSON(res)
	}
	out["add"] = add
	cached(out, "cachedAfterAdd")

	gtet, verErr := version.GreaterThanOrEqualTo(list.CNIVersion, "0.4.0")
	switch {
	case addErr != nil:
		out["check"] = map[string]interface{}{"ok": true, "skipped": "add failed"}
	case verErr != nil:
		out["check"] = step(verErr)
	case !gtet:
		out["check"] = map[string]interface{}{"ok": true, "skipped": "cniVersion < 0.4.0"}
	case list.DisableCheck:
		out["check"] = map[string]interface{}{"ok": true, "skipped": "disableCheck"}
	default:
		out["check"] = step(cni.CheckNetworkList(ctx, list, rt))
	}

	out["del"] = step(cni.DelNetworkList(ctx, list, rt))
	cached(out, "cachedAfterDel")
	out["ok"] = allOK
	emit(out)
}

// gcAttachment is libcni 1.2's types.GCAttachment.
type gcAttachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
}

// gcArgs is libcni 1.2's GCArgs.
type gcArgs struct {
	ValidAttachments []gcAttachment
}

// cachedAttachments lists the attachments of network in libcni 1.1.2's
// cache (DIR/results/NET-ID-IFNAME), as libcni 1.2's GetCachedAttachments.
func cachedAttachments(cacheDir, network string) []libcni.RuntimeConf {
	var out []libcni.RuntimeConf
	dir := cacheDir + "/results"
	entries, err := ioutil.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		data, err := ioutil.ReadFile(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		var info struct {
			ContainerID    string                 `json:"containerId"`
			IfName         string                 `json:"ifName"`
			NetworkName    string                 `json:"networkName"`
			CniArgs        [][2]string            `json:"cniArgs"`
			CapabilityArgs map[string]interface{} `json:"capabilityArgs"`
		}
		if json.Unmarshal(data, &info) != nil || info.NetworkName != network {
			continue
		}
		out = append(out, libcni.RuntimeConf{
			ContainerID:    info.ContainerID,
			IfName:         info.IfName,
			Args:           info.CniArgs,
			CapabilityArgs: info.CapabilityArgs,
		})
	}
	return out
}

// gcNetworkList is libcni 1.2's CNIConfig.GCNetworkList (see the package
// docs); it returns each plugin's GC stdin as sent.
func gcNetworkList(ctx context.Context, cni *libcni.CNIConfig, exec invoke.Exec, paths []string, cacheDir string, list *libcni.NetworkConfigList, args *gcArgs) ([]json.RawMessage, error) {
	sent := []json.RawMessage{}
	var errs []string
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
		errs = append(errs, err.Error())
	}
	valid := map[gcAttachment]bool{}
	if args != nil {
		for _, a := range args.ValidAttachments {
			valid[a] = true
		}
	}
	for _, rt := range cachedAttachments(cacheDir, list.Name) {
		if valid[gcAttachment{ContainerID: rt.ContainerID, IfName: rt.IfName}] {
			continue
		}
		rt := rt
		if err := cni.DelNetworkList(ctx, list, &rt); err != nil {
			fail(fmt.Errorf("failed to delete stale attachment %s %s: %w", rt.ContainerID, rt.IfName, err))
		}
	}
	if gt, _ := version.GreaterThanOrEqualTo(list.CNIVersion, "1.1.0"); gt {
		inject := map[string]interface{}{"name": list.Name, "cniVersion": list.CNIVersion}
		if args != nil {
			inject["cni.dev/valid-attachments"] = args.ValidAttachments
			inject["cni.dev/attachments"] = args.ValidAttachments
		}
		for _, plugin := range list.Plugins {
			conf, err := libcni.InjectConf(plugin, inject)
			if err != nil {
				fail(fmt.Errorf("failed to generate configuration to GC plugin %s: %w", plugin.Network.Type, err))
				continue
			}
			sent = append(sent, json.RawMessage(conf.Bytes))
			path, err := invoke.FindInPath(plugin.Network.Type, paths)
			if err != nil {
				fail(fmt.Errorf("failed to GC plugin %s: %w", plugin.Network.Type, err))
				continue
			}
			cniArgs := &invoke.Args{Command: "GC", Path: strings.Join(paths, string(os.PathListSeparator))}
			if err := invoke.ExecPluginWithoutResult(ctx, path, conf.Bytes, cniArgs, exec); err != nil {
				fail(fmt.Errorf("failed to GC plugin %s: %w", plugin.Network.Type, err))
			}
		}
	}
	if firstErr != nil && len(errs) > 1 {
		return sent, fmt.Errorf("%w (and: %s)", firstErr, strings.Join(errs[1:], "; "))
	}
	return sent, firstErr
}
