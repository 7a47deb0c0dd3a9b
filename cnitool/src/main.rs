//! `cnitool`: run a network configuration for a network namespace, as a
//! container runtime would, to try plugins by hand.
//!
//! ```text
//! cnitool [OPTIONS] add|check|del NETWORK NETNS
//! cnitool [OPTIONS] gc|status|version NETWORK [NETNS]
//!
//! Options:
//!   -i, --ifname NAME        interface name (default: $CNI_IFNAME, else eth0)
//!   --container-id ID        container id (default: cnitool-<sha512(NETNS)[:10] hex>)
//!   --cache-dir DIR          result cache (default: $CNI_CACHE_DIR, else /var/lib/cni)
//!   --valid ID/IFNAME        gc: an attachment still in use (repeatable;
//!                            none means every cached attachment is stale)
//!   --timeout DURATION       stop the operation's plugins after DURATION
//!                            (`90s`, `500ms`, `2m`, or plain seconds);
//!                            the plugin still running gets SIGTERM, then
//!                            SIGKILL a second later
//! Environment:
//!   NETCONFPATH  configuration directory (default /etc/cni/net.d)
//!   CNI_PATH     plugin directories, colon separated
//!   CNI_ARGS     K=V;K2=V2 passed to every plugin
//!   CAP_ARGS     JSON object of capability arguments
//! ```
//!
//! ADD prints the result; VERSION prints each plugin's answer. A failure
//! prints the CNI error JSON on stdout and exits 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use cni_invoke::{NetworkList, Runtime, RuntimeConf};
use cni_skel::{ProcessEnv, TraceContext};
use cni_types::{Attachment, Code, Error};
use serde_json::{Map, Value};
use sha2::{Digest, Sha512};

struct Options {
    command: String,
    network: String,
    netns: Option<String>,
    ifname: Option<String>,
    container_id: Option<String>,
    cache_dir: Option<PathBuf>,
    valid: Vec<Attachment>,
    timeout: Option<Duration>,
}

fn parse_options(args: &[String]) -> anyhow::Result<Options> {
    let mut positional = Vec::new();
    let mut opts = Options {
        command: String::new(),
        network: String::new(),
        netns: None,
        ifname: None,
        container_id: None,
        cache_dir: None,
        valid: Vec::new(),
        timeout: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-i" | "--ifname" => opts.ifname = Some(value(arg)?),
            "--container-id" => opts.container_id = Some(value(arg)?),
            "--cache-dir" => opts.cache_dir = Some(value(arg)?.into()),
            "--valid" => {
                let v = value(arg)?;
                let (container_id, ifname) = v
                    .split_once('/')
                    .with_context(|| format!("--valid {v:?}: expected ID/IFNAME"))?;
                opts.valid.push(Attachment {
                    container_id: container_id.into(),
                    ifname: ifname.into(),
                });
            }
            "--timeout" => opts.timeout = Some(parse_duration(&value(arg)?)?),
            "-h" | "--help" => bail!("usage"),
            flag if flag.starts_with('-') => bail!("unknown option {flag:?}"),
            _ => positional.push(arg.clone()),
        }
    }
    let mut positional = positional.into_iter();
    opts.command = positional.next().context("a command is required")?;
    opts.network = positional.next().context("a network name is required")?;
    opts.netns = positional.next();
    if positional.next().is_some() {
        bail!("too many arguments");
    }
    Ok(opts)
}

/// `90s`, `500ms`, `2m` or plain seconds (`1.5`), positive.
fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let seconds_per_unit = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => bail!("--timeout {text:?}: unknown unit {unit:?} (use ms, s, m or h)"),
    };
    let number: f64 = number
        .parse()
        .with_context(|| format!("--timeout {text:?}: not a number of {unit}"))?;
    Duration::try_from_secs_f64(number * seconds_per_unit)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("--timeout {text:?}: must be a positive duration"))
}

const USAGE: &str =
    "usage: cnitool [-i IFNAME] [--container-id ID] [--cache-dir DIR] [--valid ID/IFNAME]... \
[--timeout DURATION] add|check|del|gc|status|version NETWORK [NETNS]";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `CNI_ARGS`: `K=V` pairs, neither side empty (as the reference cnitool).
fn cni_args() -> Result<Vec<(String, String)>, Error> {
    let Some(raw) = env("CNI_ARGS") else {
        return Ok(Vec::new());
    };
    raw.split(';')
        .map(|pair| match pair.split('=').collect::<Vec<_>>()[..] {
            [k, v] if !k.is_empty() && !v.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(Error::invalid_env(
                "CNI_ARGS",
                format!("{pair:?} is not KEY=VALUE"),
            )),
        })
        .collect()
}

fn capability_args() -> Result<Map<String, Value>, Error> {
    let Some(raw) = env("CAP_ARGS") else {
        return Ok(Map::new());
    };
    serde_json::from_str(&raw).map_err(|e| Error::decoding("CAP_ARGS (a JSON object)", e))
}

/// The reference cnitool's container id: a hash of the netns path, so the
/// same namespace always gets the same id.
fn default_container_id(netns: &str) -> String {
    let digest = Sha512::digest(netns.as_bytes());
    let hex: String = digest[..10].iter().map(|b| format!("{b:02x}")).collect();
    format!("cnitool-{hex}")
}

fn absolute(p: &str) -> String {
    let path = Path::new(p);
    if path.is_absolute() {
        return p.to_owned();
    }
    std::env::current_dir()
        .map(|d| d.join(path).display().to_string())
        .unwrap_or_else(|_| p.to_owned())
}

/// Runs the command; what to print on success, if anything.
fn run(opts: Options) -> Result<Option<Vec<u8>>, Error> {
    let conf_dir = env("NETCONFPATH").unwrap_or_else(|| "/etc/cni/net.d".into());
    let net = NetworkList::load(Path::new(&conf_dir), &opts.network)?;
    let path = env("CNI_PATH")
        .map(|p| {
            p.split(':')
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let cache_dir = opts
        .cache_dir
        .clone()
        .or_else(|| env("CNI_CACHE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| "/var/lib/cni".into());
    let mut runtime = Runtime::new(path, cache_dir);
    runtime.timeout = opts.timeout;
    // Run from a traced shell or job (OTEP 0258), cnitool passes the trace
    // context on to the plugins.
    runtime.trace = TraceContext::from_env(&ProcessEnv);

    let needs_netns = matches!(opts.command.as_str(), "add" | "check" | "del");
    let attachment = || -> Result<RuntimeConf, Error> {
        let netns = absolute(opts.netns.as_deref().unwrap_or_default());
        Ok(RuntimeConf {
            container_id: opts
                .container_id
                .clone()
                .unwrap_or_else(|| default_container_id(&netns)),
            ifname: opts
                .ifname
                .clone()
                .or_else(|| env("CNI_IFNAME"))
                .unwrap_or_else(|| "eth0".into()),
            netns,
            args: cni_args()?,
            capability_args: capability_args()?,
        })
    };
    if needs_netns && opts.netns.is_none() {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            format!("{}: a network namespace path is required", opts.command),
        ));
    }
    match opts.command.as_str() {
        "add" => Ok(Some(runtime.add(&net, &attachment()?)?.to_json())),
        "check" => runtime.check(&net, &attachment()?).map(|()| None),
        "del" => runtime.del(&net, &attachment()?).map(|()| None),
        "status" => runtime.status(&net).map(|()| None),
        "gc" => runtime
            .gc(&net, &opts.valid)
            .map(|()| None)
            .map_err(|errors| {
                // The first error speaks for itself; the others are listed after it.
                let mut first = errors[0].clone();
                let rest: Vec<String> = errors[1..].iter().map(ToString::to_string).collect();
                if !rest.is_empty() {
                    first.details = format!("{}; also: {}", first.details, rest.join("; "));
                }
                first
            }),
        "version" => {
            let mut answers = Map::new();
            for plugin in &net.list.plugins {
                let plugin_type = plugin
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let info = runtime.version_info(plugin_type)?;
                let supports = info.reconcile(net.version()).is_ok();
                answers.insert(
                    plugin_type.to_owned(),
                    serde_json::json!({"supportedVersions": info.supported(), "supportsListVersion": supports}),
                );
            }
            Ok(Some(
                serde_json::to_vec_pretty(&answers).unwrap_or_default(),
            ))
        }
        other => Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            format!("unknown command {other:?}"),
        )
        .with_details(USAGE)),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cnitool: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    match run(opts) {
        Ok(None) => {}
        Ok(Some(mut bytes)) => {
            if !bytes.ends_with(b"\n") {
                bytes.push(b'\n');
            }
            let _ = std::io::stdout().lock().write_all(&bytes);
        }
        Err(err) => {
            print!("{}", String::from_utf8_lossy(&err.to_json()));
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_read_with_or_without_a_unit() {
        let ok = |t| parse_duration(t).unwrap();
        assert_eq!(ok("90s"), Duration::from_secs(90));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("1.5"), Duration::from_millis(1500));
        for bad in ["0", "-1s", "5x", "s", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
