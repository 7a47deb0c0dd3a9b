#!/usr/bin/env python3
"""Writes a tiny OCI image archive for containerd's pod sandboxes, no registry.

    make_image.py OUT.tar IMAGE_NAME [BUSYBOX]

One layer holding a static busybox (default /bin/busybox, Debian's
busybox-static) as /bin/busybox and /bin/sleep; its entrypoint sleeps, the
work the pause container does. `ctr -n k8s.io images import OUT.tar` names it
IMAGE_NAME (the `io.containerd.image.name` annotation of index.json), which
containerd's CRI plugin is told to use as `sandbox_image`.

Only the standard library: runs with any python3.
"""

import hashlib
import io
import json
import sys
import tarfile


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def layer(busybox):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("bin", "dev", "proc", "sys", "etc", "tmp"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
        with open(busybox, "rb") as f:
            data = f.read()
        info = tarfile.TarInfo("bin/busybox")
        info.size = len(data)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(data))
        for applet in ("sleep", "sh"):
            link = tarfile.TarInfo("bin/" + applet)
            link.type = tarfile.SYMTYPE
            link.linkname = "busybox"
            tar.addfile(link)
    return buf.getvalue()


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    out, name = sys.argv[1], sys.argv[2]
    busybox = sys.argv[3] if len(sys.argv) == 4 else "/bin/busybox"

    layer_digest, layer_data = blob(layer(busybox))
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": ["/bin/sleep", "2147483647"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }
    config_digest, config_data = blob(json.dumps(config).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": len(config_data)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": len(layer_data)}],
    }
    manifest_digest, manifest_data = blob(json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": len(manifest_data),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"io.containerd.image.name": name,
                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
        }],
    }
    files = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
             ("index.json", json.dumps(index).encode())]
    for digest, data in ((layer_digest, layer_data), (config_digest, config_data),
                         (manifest_digest, manifest_data)):
        files.append(("blobs/sha256/" + digest.split(":", 1)[1], data))
    with tarfile.open(out, "w") as tar:
        for path, data in files:
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    print(json.dumps({"name": name, "manifest": manifest_digest}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
