#!/usr/bin/env python3
"""A small CRI v1 client: what the kubelet asks of containerd, on the command line.

The tests in tests/tests/containerd_cri.rs drive containerd's CRI plugin
through it, the path a kubelet takes to a pod's network: RunPodSandbox makes
the sandbox and calls the CNI plugins, PodSandboxStatus reports the pod IP,
StopPodSandbox and RemovePodSandbox run the DELs.

Runs in the venv scripts/install-test-deps.sh makes (PyPI `grpcio` and
`container-runtime-interface-api`, the CRI v1 stubs). Every command prints
one JSON object on stdout; a gRPC failure prints the status code and details
on stderr and exits 1.

    cri.py SOCKET version
    cri.py SOCKET run NAME UID NAMESPACE [--port PROTO:CONTAINER:HOST[:HOSTIP]]...
                                         [--annotation KEY=VALUE]...
    cri.py SOCKET status POD_ID
    cri.py SOCKET list
    cri.py SOCKET stop POD_ID
    cri.py SOCKET remove POD_ID
"""

import argparse
import json
import sys

import grpc
from cri_api.v1 import api_pb2, api_pb2_grpc

# A pod sandbox's creation includes the CNI calls; generous for slow machines.
TIMEOUT = 120


def runtime(socket):
    channel = grpc.insecure_channel("unix://" + socket)
    return api_pb2_grpc.RuntimeServiceStub(channel)


def port_mapping(text):
    parts = text.split(":")
    if len(parts) not in (3, 4):
        raise argparse.ArgumentTypeError(f"--port {text!r}: want PROTO:CONTAINER:HOST[:HOSTIP]")
    proto = api_pb2.Protocol.Value(parts[0].upper())
    return api_pb2.PortMapping(
        protocol=proto,
        container_port=int(parts[1]),
        host_port=int(parts[2]),
        host_ip=parts[3] if len(parts) == 4 else "",
    )


def annotation(text):
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--annotation {text!r}: want KEY=VALUE")
    return key, value


def netns_of(info):
    """The network namespace path from containerd's verbose sandbox info."""
    for ns in info.get("runtimeSpec", {}).get("linux", {}).get("namespaces", []):
        if ns.get("type") == "network":
            return ns.get("path", "")
    return ""


def status(rt, pod_id):
    resp = rt.PodSandboxStatus(
        api_pb2.PodSandboxStatusRequest(pod_sandbox_id=pod_id, verbose=True), timeout=TIMEOUT
    )
    info = json.loads(resp.info.get("info", "{}"))
    st = resp.status
    return {
        "id": st.id,
        "state": api_pb2.PodSandboxState.Name(st.state),
        "ip": st.network.ip,
        "additional_ips": [i.ip for i in st.network.additional_ips],
        "netns": netns_of(info),
        "pid": info.get("pid", 0),
        "cniResult": info.get("cniResult"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("socket")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    run = sub.add_parser("run")
    run.add_argument("name")
    run.add_argument("uid")
    run.add_argument("namespace")
    run.add_argument("--port", type=port_mapping, action="append", default=[])
    run.add_argument("--annotation", type=annotation, action="append", default=[])
    run.add_argument("--log-dir", default="")
    for cmd in ("status", "stop", "remove"):
        sub.add_parser(cmd).add_argument("pod_id")
    sub.add_parser("list")
    args = parser.parse_args()

    rt = runtime(args.socket)
    try:
        if args.cmd == "version":
            v = rt.Version(api_pb2.VersionRequest(version="v1"), timeout=TIMEOUT)
            out = {"runtime": v.runtime_name, "version": v.runtime_version,
                   "api": v.runtime_api_version}
        elif args.cmd == "run":
            config = api_pb2.PodSandboxConfig(
                metadata=api_pb2.PodSandboxMetadata(
                    name=args.name, uid=args.uid, namespace=args.namespace, attempt=0
                ),
                hostname=args.name,
                log_directory=args.log_dir,
                port_mappings=args.port,
                annotations=dict(args.annotation),
                linux=api_pb2.LinuxPodSandboxConfig(
                    security_context=api_pb2.LinuxSandboxSecurityContext(
                        namespace_options=api_pb2.NamespaceOption(
                            network=api_pb2.NamespaceMode.POD,
                            pid=api_pb2.NamespaceMode.POD,
                            ipc=api_pb2.NamespaceMode.POD,
                        )
                    )
                ),
            )
            resp = rt.RunPodSandbox(api_pb2.RunPodSandboxRequest(config=config), timeout=TIMEOUT)
            out = status(rt, resp.pod_sandbox_id)
        elif args.cmd == "status":
            out = status(rt, args.pod_id)
        elif args.cmd == "list":
            resp = rt.ListPodSandbox(api_pb2.ListPodSandboxRequest(), timeout=TIMEOUT)
            out = {"items": [{"id": p.id, "name": p.metadata.name,
                              "state": api_pb2.PodSandboxState.Name(p.state)}
                             for p in resp.items]}
        elif args.cmd == "stop":
            rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=args.pod_id),
                              timeout=TIMEOUT)
            out = {}
        elif args.cmd == "remove":
            rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=args.pod_id),
                                timeout=TIMEOUT)
            out = {}
    except grpc.RpcError as e:
        print(f"cri.py {args.cmd}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
