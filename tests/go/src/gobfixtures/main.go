// Command gobfixtures records what Go's net/rpc writes on the dhcp
// plugin's socket, client and server side, for cni-dhcp's gob and rpc
// unit tests: `gobfixtures OUTDIR` writes one pair of files per exchange,
// NAME.client (what the plugin sends: the HTTP CONNECT, the gob request
// header and CmdArgs) and NAME.server (what the daemon answers: the HTTP
// reply, the gob response header and body).
//
// The "v111" exchanges use skel.CmdArgs and types100.Result of Debian's
// containernetworking/cni library (the one Debian's dhcp 1.1.1 is built
// with); the "v19" ones use copies of their shapes in cni v1.3.0 (plugins
// v1.9) under ./v19, with the same names.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	skel111 "github.com/containernetworking/cni/pkg/skel"
	types111 "github.com/containernetworking/cni/pkg/types"
	current111 "github.com/containernetworking/cni/pkg/types/100"

	"gobfixtures/v19/skel"
	"gobfixtures/v19/types"
	"gobfixtures/v19/types100"
)

const conf = `{"cniVersion":"1.0.0","name":"dhcpnet","type":"macvlan","ipam":{"type":"dhcp"}}`

func ipnet(s string) net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip.To4()
	return *n
}

// DHCP111 answers as a daemon of plugins 1.1.1 would.
type DHCP111 struct{}

func (DHCP111) Allocate(args *skel111.CmdArgs, result *current111.Result) error {
	if args.ContainerID == "exhausted" {
		return errors.New("no more tries")
	}
	result.IPs = []*current111.IPConfig{{Address: ipnet("10.77.0.23/24"), Gateway: net.ParseIP("10.77.0.1").To4()}}
	result.Routes = []*types111.Route{{Dst: ipnet("0.0.0.0/0"), GW: net.ParseIP("10.77.0.1").To4()}}
	return nil
}

func (DHCP111) Release(args *skel111.CmdArgs, _ *struct{}) error { return nil }

// DHCP19 answers as a daemon of plugins v1.9 would (priority 100).
type DHCP19 struct{}

func (DHCP19) Allocate(args *skel.CmdArgs, result *types100.Result) error {
	scope := 253
	result.IPs = []*types100.IPConfig{{Address: ipnet("10.77.0.23/24"), Gateway: net.ParseIP("10.77.0.1").To4()}}
	result.Routes = []*types.Route{
		{Dst: ipnet("0.0.0.0/0"), GW: net.ParseIP("10.77.0.1").To4(), Priority: 100},
		{Dst: ipnet("192.168.7.0/24"), Priority: 100, Scope: &scope},
	}
	return nil
}

// recorder keeps what passes through a connection, each way.
type recorder struct {
	net.Conn
	sent, received []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.received = append(r.received, p[:n]...)
	return n, err
}

func (r *recorder) Write(p []byte) (int, error) {
	r.sent = append(r.sent, p...)
	return r.Conn.Write(p)
}

// call makes one call as the reference plugin's rpcCall does
// (rpc.DialHTTP, Call), recording the connection.
func call(socket, method string, args, reply interface{}) (*recorder, error) {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	rec := &recorder{Conn: conn}
	io.WriteString(rec, "CONNECT "+rpc.DefaultRPCPath+" HTTP/1.0\n\n")
	resp, err := http.ReadResponse(bufio.NewReader(rec), &http.Request{Method: "CONNECT"})
	if err != nil || resp.Status != "200 Connected to Go RPC" {
		return nil, fmt.Errorf("unexpected HTTP response: %v %v", resp, err)
	}
	client := rpc.NewClient(rec)
	callErr := client.Call(method, args, reply)
	client.Close()
	return rec, callErr
}

// serve answers on socket as the daemon of `version` does, until killed.
func serve(socket, version string) {
	if version == "v19" {
		rpc.RegisterName("DHCP", DHCP19{})
	} else {
		rpc.RegisterName("DHCP", DHCP111{})
	}
	rpc.HandleHTTP()
	l, err := net.Listen("unix", socket)
	if err != nil {
		panic(err)
	}
	http.Serve(l, nil)
}

// client makes the call of exchange `name` and writes its two files.
func client(socket, out, name string) {
	args := &skel111.CmdArgs{ContainerID: "c1", Netns: "/run/netns/c1", IfName: "eth0", Args: "K8S_POD_NAME=web-0", Path: "/opt/cni/bin", StdinData: []byte(conf)}
	args19 := &skel.CmdArgs{ContainerID: "c1", Netns: "/run/netns/c1", IfName: "eth0", Args: "K8S_POD_NAME=web-0", Path: "/opt/cni/bin", StdinData: []byte(conf)}
	var rec *recorder
	var err error
	switch name {
	case "v111-allocate":
		rec, err = call(socket, "DHCP.Allocate", args, &current111.Result{CNIVersion: "1.0.0"})
	case "v111-release":
		rec, err = call(socket, "DHCP.Release", args, &struct{}{})
	case "v111-exhausted":
		args.ContainerID = "exhausted"
		rec, err = call(socket, "DHCP.Allocate", args, &current111.Result{})
		if err != nil && err.Error() == "no more tries" {
			err = nil
		}
	case "v111-unknown-method":
		rec, err = call(socket, "DHCP.Status", args, &struct{}{})
		if err != nil && err.Error() == "rpc: can't find method DHCP.Status" {
			err = nil
		}
	case "v19-allocate":
		rec, err = call(socket, "DHCP.Allocate", args19, &types100.Result{CNIVersion: "1.0.0"})
	}
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	os.WriteFile(filepath.Join(out, name+".client"), rec.sent, 0o644)
	os.WriteFile(filepath.Join(out, name+".server"), rec.received, 0o644)
}

func main() {
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2], os.Args[3])
		return
	case "call":
		client(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	// Each exchange between a fresh server process and a fresh client
	// process, so that the type ids are those of a daemon and a plugin
	// making their first call.
	out := os.Args[1]
	dir, err := os.MkdirTemp("", "gobfixtures")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"v111-allocate", "v111-release", "v111-exhausted", "v111-unknown-method", "v19-allocate"} {
		socket := filepath.Join(dir, name+".sock")
		server := exec.Command(os.Args[0], "serve", socket, name[:strings.Index(name, "-")])
		server.Stderr = os.Stderr
		if err := server.Start(); err != nil {
			panic(err)
		}
		for i := 0; i < 500; i++ {
			if c, err := net.Dial("unix", socket); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd := exec.Command(os.Args[0], "call", socket, out, name)
		cmd.Stderr = os.Stderr
		err := cmd.Run()
		server.Process.Kill()
		server.Wait()
		if err != nil {
			panic(err)
		}
	}
}
