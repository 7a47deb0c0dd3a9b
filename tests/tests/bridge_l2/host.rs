//! The bridge's kernel side for the layer-2 tests: a host namespace
//! holding the bridge, containers, and both plugins (ours in-process, the
//! reference under `nsenter`). Shared with `tests/vm/bridge_vlan.rs`,
//! which uses a part of it.
#![allow(dead_code)]

use std::process::Command;

use cni_net::testing::TempNetns;
use cni_net::NetError;
use cni_version::PluginInfo;
use plugins_sample::bridge::Bridge;
use serde_json::{json, Value};
use tests::{output_of, reference_plugin_dir};

/// What a plugin run gave: its exit status and its JSON (result or error).
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub json: Value,
}

impl Ran {
    pub fn ok(&self) -> &Value {
        assert_eq!(self.code, 0, "{}", self.json);
        &self.json
    }
}

/// The plugin side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Side {
    Ours,
    Reference,
}

/// A host namespace with its bridge, its IPAM store, and containers.
pub struct Host {
    pub ns: TempNetns,
    pub ipam: tempfile::TempDir,
}

impl Host {
    pub fn new() -> Host {
        Host {
            ns: TempNetns::new("l2-host").unwrap(),
            ipam: tempfile::tempdir().unwrap(),
        }
    }

    /// A layer-3 configuration on `subnet` with the gateway on `br0`,
    /// plus `fields`.
    pub fn with_ipam(&self, subnet: &str, fields: Value) -> Value {
        let mut conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge",
            "bridge": "br0", "isGateway": true,
            "ipam": {"type": "host-local", "dataDir": self.ipam.path(),
                     "ranges": [[{"subnet": subnet}]]}});
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        conf
    }

    /// Runs `command` of `side`'s bridge for `eth0` in `container`.
    pub fn run(&self, side: Side, container: &TempNetns, command: &str, conf: &Value) -> Ran {
        match side {
            Side::Ours => {
                let req = container
                    .request(command, "eth0")
                    .env("CNI_PATH", reference_plugin_dir().display().to_string())
                    .stdin(conf.to_string());
                let out = self
                    .ns
                    .run(|_| Ok::<_, NetError>(req.run(&Bridge, &PluginInfo::all())))
                    .unwrap();
                Ran {
                    code: out.exit_code,
                    json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
                }
            }
            Side::Reference => {
                let bin = reference_plugin_dir().join("bridge");
                let mut cmd = Command::new("nsenter");
                cmd.arg(format!("--net={}", self.ns.path().display()))
                    .arg(&bin)
                    .env_clear()
                    .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                    .env("CNI_COMMAND", command)
                    .env("CNI_CONTAINERID", container.name())
                    .env("CNI_NETNS", container.path())
                    .env("CNI_IFNAME", "eth0")
                    .env("CNI_PATH", reference_plugin_dir());
                let out = output_of(&mut cmd, conf.to_string().as_bytes());
                Ran {
                    code: out.status().unwrap_or(-1),
                    json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
                }
            }
        }
    }

    /// `nft list table bridge nat` in the host namespace, with handles,
    /// the container's id, its port and its MAC as placeholders; empty
    /// when there is no table.
    pub fn spoofcheck_table(&self, cid: &str, port: &str, mac: &str) -> String {
        let out = in_ns(&self.ns, &["nft", "list", "table", "bridge", "nat"]);
        out.replace(cid, "<cid>")
            .replace(&format!("\"{port}\""), "\"<port>\"")
            .replace(mac, "<mac>")
    }
}

/// Runs a command inside `ns`; its stdout, or "" when it failed.
pub fn in_ns(ns: &TempNetns, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns.name()])
        .args(args)
        .output()
        .unwrap();
    match out.status.success() {
        true => String::from_utf8_lossy(&out.stdout).into_owned(),
        false => String::new(),
    }
}

/// Whether one ping from `from` to `addr` is answered within a second.
pub fn pings(from: &TempNetns, addr: &str) -> bool {
    Command::new("ip")
        .args([
            "netns",
            "exec",
            from.name(),
            "ping",
            "-c1",
            "-W1",
            "-q",
            addr,
        ])
        .output()
        .unwrap()
        .status
        .success()
}

/// The address (without prefix) of the result's first IP.
pub fn address(result: &Value) -> String {
    let cidr = result["ips"][0]["address"].as_str().unwrap();
    cidr.split('/').next().unwrap().to_owned()
}

/// The result's interface `i`: (name, mac).
pub fn interface(result: &Value, i: usize) -> (String, String) {
    let iface = &result["interfaces"][i];
    (
        iface["name"].as_str().unwrap().to_owned(),
        iface["mac"].as_str().unwrap().to_owned(),
    )
}

pub fn with_prev(conf: &Value, result: &Value) -> Value {
    let mut conf = conf.clone();
    conf["prevResult"] = result.clone();
    conf
}

pub fn containers<const N: usize>() -> [TempNetns; N] {
    std::array::from_fn(|_| TempNetns::new("l2-ctr").unwrap())
}
