//! Concurrent ADDs for distinct containers, as a runtime starting many
//! pods at once makes them.

use std::sync::Arc;

use std::collections::HashMap;
use std::path::PathBuf;

use cni_net::testing::TempNetns;
use cni_skel::Command;
use cni_types::{IpNetwork, SpecVersion};
use serde_json::Value;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::lifecycle::result_of;
use crate::netns;
use crate::session::Session;
use crate::target::Kind;

/// How many ADDs run at once.
pub const PARALLEL: usize = 16;

use crate::scenarios::ConcurrentAdds;

/// One container of the scenario.
struct Attachment {
    id: String,
    ifname: String,
    netns: PathBuf,
}

fn run(s: &Session, version: &SpecVersion) -> ConcurrentAdds {
    // A namespace per container for interface plugins, as a runtime
    // gives; for the others (and in a namespace of the user's), interface
    // names of their own in the one namespace.
    let namespaces: Vec<TempNetns> = if s.owns_netns() && s.kind() == Kind::Interface {
        (0..PARALLEL)
            .map_while(|_| netns::temporary().ok())
            .collect()
    } else {
        Vec::new()
    };
    let own = namespaces.len() == PARALLEL;
    let attachments: Vec<Attachment> = (0..PARALLEL)
        .map(|i| Attachment {
            id: format!("cnic-par-{i}"),
            ifname: if own {
                s.target().ifname.clone()
            } else {
                format!("{}p{i}", s.target().ifname)
            },
            netns: if own {
                namespaces[i].path().to_owned()
            } else {
                s.netns().to_owned()
            },
        })
        .collect();
    for a in &attachments {
        s.prepare_link(&a.netns, &a.ifname);
    }
    let exec_all = |command: Command, config: &dyn Fn(usize) -> Value| -> Vec<Arc<Call>> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = attachments
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let stdin = config(i).to_string();
                    let mut invocation = s.invocation(command.clone(), &a.id, &a.ifname);
                    invocation.netns = a.netns.display().to_string();
                    let step = format!("concurrent {command} {}", a.id);
                    scope.spawn(move || s.exec(step, &invocation, stdin.as_bytes()))
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        })
    };
    let adds = exec_all(Command::Add, &|i| {
        let a = &attachments[i];
        s.add_config(version, &a.netns, &a.ifname, 100 + i as u8)
    });
    let results: Vec<Option<Value>> = adds.iter().map(|add| result_of(add)).collect();
    let with_prev = *version >= SpecVersion::V0_4_0;
    exec_all(Command::Del, &|i| {
        s.config(version, results[i].as_ref().filter(|_| with_prev))
    });
    ConcurrentAdds { adds }
}

/// The addresses a result assigns, in any layout; loopback addresses are
/// the same in every namespace and left out.
pub fn addresses(result: &Value) -> Vec<IpNetwork> {
    let mut texts: Vec<&Value> = Vec::new();
    if let Some(ips) = result["ips"].as_array() {
        texts.extend(ips.iter().map(|ip| &ip["address"]));
    }
    texts.extend(["ip4", "ip6"].iter().map(|f| &result[*f]["ip"]));
    texts
        .into_iter()
        .filter_map(|t| t.as_str()?.parse::<IpNetwork>().ok())
        .filter(|n| !n.addr().is_loopback())
        .collect()
}

/// Whether the configuration `call` was given names `addr` itself (as a
/// string `ADDR` or `ADDR/PREFIX` anywhere in it): an address the operator
/// chose, as `static` IPAM's `addresses` are, is handed out as written
/// (the reference `static` does the same), so giving it to every
/// container of that configuration is the operator's doing, not an
/// allocation conflict.
fn configured(call: &Call, addr: std::net::IpAddr) -> bool {
    fn names(value: &Value, addr: &str) -> bool {
        match value {
            Value::String(text) => text
                .strip_prefix(addr)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
            Value::Array(items) => items.iter().any(|v| names(v, addr)),
            Value::Object(map) => map.values().any(|v| names(v, addr)),
            _ => false,
        }
    }
    serde_json::from_slice::<Value>(&call.stdin)
        .is_ok_and(|config| names(&config, &addr.to_string()))
}

fn distinct_results(s: &Session) -> Verdict {
    let Some(version) = s.versions().last().cloned() else {
        return Verdict::Skip("no version to configure".into());
    };
    let outcome = s.concurrency.get_or_init(|| run(s, &version));
    let mut findings = Vec::new();
    let mut owner: HashMap<std::net::IpAddr, &Call> = HashMap::new();
    for call in &outcome.adds {
        let Some(result) = result_of(call) else {
            findings.push(Finding::on(
                call,
                format!("{} failed ({})", call.step, call.outcome()),
            ));
            continue;
        };
        for address in addresses(&result) {
            if configured(call, address.addr()) {
                continue;
            }
            if let Some(first) = owner.insert(address.addr(), call) {
                findings.push(Finding::on(
                    call,
                    format!("{address} was also given to `{}`", first.step),
                ));
            }
        }
    }
    Verdict::from_findings(findings)
}

/// The cases of this section.
pub const CASES: [Case; 1] = [Case {
    id: "CONCURRENT-ADD",
    spec: "SPEC-1.0.0 §2 Parameters, §5 Success",
    quote: "`CNI_CONTAINERID`: Container ID. A unique plaintext identifier for a container, allocated by the runtime. ... `ips`: IPs assigned by this attachment.",
    // Runtimes run plugins concurrently for different containers; two
    // containers given one address is a broken network, so MUST for IPAM.
    level: Level::Should,
    ipam_level: Some(Level::Must),
    check: distinct_results,
}];
