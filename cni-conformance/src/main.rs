//! `cni-conformance [OPTIONS] PLUGIN`: arguments and signals only; the
//! library does the rest.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{bail, Context};
use cni_conformance::{cases, run, Cancel, Kind, NetnsChoice, Selection, Target};
use cni_types::SpecVersion;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

const USAGE: &str = "\
usage: cni-conformance [OPTIONS] PLUGIN

Checks the CNI plugin executable PLUGIN against the spec's contract.

options:
  --kind interface|ipam|chained  what the plugin is (default: interface)
  --config FILE        network configuration for the plugin (`type` filled in
                       when missing; default: a minimal one for the kind)
  --versions LIST      comma-separated versions (default: what VERSION reports,
                       within 0.1.0..1.1.0)
  --netns auto|PATH    auto (default): a temporary namespace, created and
                       removed by the tool (needs root); or an existing one
  --cni-path DIRS      CNI_PATH, ':'-separated (default: PLUGIN's directory,
                       then /usr/lib/cni)
  --ipam TYPE          IPAM plugin of the default interface config (host-local)
  --ifname NAME        CNI_IFNAME (default: eth0)
  --cni-args K=V;..    CNI_ARGS for every call
  --only IDS           run only these checks (comma-separated)
  --skip IDS           do not run these checks (comma-separated)
  --timeout SECS       per execution of the plugin (default: 10); after 3
                       executions timed out the plugin is taken for hung and
                       the checks left are reported as not run
  --private-mounts     run the plugin in a mount namespace of its own (needs
                       root): what it mounts vanishes when it exits
  --json FILE          write the report as JSON
  --junit FILE         write the report as JUnit XML
  --list               list the checks and exit

The plugin runs in a fresh temporary working directory. On SIGINT,
SIGTERM or SIGHUP the running plugins are stopped (their process groups
get SIGTERM, then SIGKILL), the namespaces and temporary directories are
removed, the report so far is printed, and the exit status is 128 plus
the signal's number; a second signal ends the tool at once.

Exit status: 0 when no MUST check fails, 1 when one does, 2 on usage or
setup errors, 128+N after signal N.";

struct Options {
    target: Target,
    selection: Selection,
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
}

fn ids(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads the arguments; `Ok(None)` when the work is done (help, list).
fn parse(args: Vec<String>) -> anyhow::Result<Option<Options>> {
    let mut kind = Kind::Interface;
    let mut plugin = None;
    let mut config = None;
    let mut versions = None;
    let mut netns = NetnsChoice::Auto;
    let mut cni_path = None;
    let mut ipam = None;
    let mut ifname = None;
    let mut cni_args = Vec::new();
    let mut timeout = None;
    let mut private_mounts = false;
    let mut selection = Selection::all();
    let (mut json, mut junit) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = || -> anyhow::Result<String> {
            inline
                .clone()
                .or_else(|| args.next())
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "--list" => {
                for case in cases::all() {
                    println!("{:30} {:6} {}", case.id, case.level.to_string(), case.spec);
                }
                return Ok(None);
            }
            "--kind" => {
                let v = value()?;
                kind = Kind::parse(&v).with_context(|| {
                    format!("--kind {v:?}: expected interface, ipam or chained")
                })?;
            }
            "--config" => {
                let path = value()?;
                let bytes =
                    std::fs::read(&path).with_context(|| format!("cannot read --config {path}"))?;
                config = Some(
                    serde_json::from_slice(&bytes)
                        .with_context(|| format!("--config {path} is not JSON"))?,
                );
            }
            "--versions" => {
                let list = ids(&value()?)
                    .iter()
                    .map(|v| SpecVersion::parse(v).with_context(|| format!("--versions: {v:?}")))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                versions = Some(list);
            }
            "--netns" => {
                let v = value()?;
                netns = match v.as_str() {
                    "auto" => NetnsChoice::Auto,
                    path => NetnsChoice::Path(path.into()),
                };
            }
            "--cni-path" => {
                cni_path = Some(std::env::split_paths(&value()?).collect::<Vec<_>>());
            }
            "--ipam" => ipam = Some(value()?),
            "--ifname" => ifname = Some(value()?),
            "--cni-args" => {
                for pair in value()?.split(';').filter(|p| !p.is_empty()) {
                    let (k, v) = pair
                        .split_once('=')
                        .with_context(|| format!("--cni-args: {pair:?} is not K=V"))?;
                    cni_args.push((k.to_owned(), v.to_owned()));
                }
            }
            "--only" => selection.only.extend(ids(&value()?)),
            "--skip" => selection.skip.extend(ids(&value()?)),
            "--timeout" => {
                let v = value()?;
                let positive = v
                    .parse::<f64>()
                    .ok()
                    .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                    .filter(|d| !d.is_zero());
                timeout = Some(positive.with_context(|| {
                    format!("--timeout {v:?}: expected a positive number of seconds")
                })?);
            }
            "--private-mounts" => private_mounts = true,
            "--json" => json = Some(PathBuf::from(value()?)),
            "--junit" => junit = Some(PathBuf::from(value()?)),
            f if f.starts_with('-') => bail!("unknown option {f}\n\n{USAGE}"),
            _ if plugin.is_none() => plugin = Some(PathBuf::from(arg)),
            _ => bail!("more than one PLUGIN given\n\n{USAGE}"),
        }
    }
    let plugin = plugin.with_context(|| format!("no PLUGIN given\n\n{USAGE}"))?;
    let mut target = Target::new(plugin, kind);
    target.config = config;
    target.versions = versions;
    target.netns = netns;
    target.cni_args = cni_args;
    target.private_mounts = private_mounts;
    if let Some(p) = cni_path {
        target.cni_path = p;
    }
    if let Some(i) = ipam {
        target.ipam = i;
    }
    if let Some(i) = ifname {
        target.ifname = i;
    }
    if let Some(t) = timeout {
        target.timeout = t;
    }
    Ok(Some(Options {
        target,
        selection,
        json,
        junit,
    }))
}

fn main() -> ExitCode {
    match try_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cni-conformance: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The switch the signal handler throws, and the signal that threw it.
static CANCEL: OnceLock<Cancel> = OnceLock::new();
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Async-signal-safe: an atomic store, then the switch's own store and
/// `write(2)`.
extern "C" fn on_signal(signal: nix::libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    if let Some(cancel) = CANCEL.get() {
        cancel.cancel();
    }
}

/// A switch thrown by SIGINT, SIGTERM or SIGHUP; each handler is reset
/// once it ran, so a second signal ends the tool at once.
fn cancelled_by_signals() -> anyhow::Result<Cancel> {
    let cancel = Cancel::new().context("cannot make the switch that stops a run")?;
    let cancel = CANCEL.get_or_init(|| cancel);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESETHAND | SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores atomics and throws the switch,
        // all async-signal-safe.
        #[allow(unsafe_code)]
        unsafe { sigaction(signal, &action) }.with_context(|| format!("cannot handle {signal}"))?;
    }
    Ok(cancel.clone())
}

fn try_main() -> anyhow::Result<ExitCode> {
    let Some(mut options) = parse(std::env::args().skip(1).collect())? else {
        return Ok(ExitCode::SUCCESS);
    };
    options.target.cancel = Some(cancelled_by_signals()?);
    let report = run(&options.target, &options.selection)?;
    print!("{}", report.text());
    if let Some(path) = &options.json {
        let text = serde_json::to_string_pretty(&report.json())?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &options.junit {
        std::fs::write(path, report.junit())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let signal = SIGNAL.load(Ordering::SeqCst);
    if signal != 0 {
        eprintln!("cni-conformance: stopped by signal {signal}; the run's namespaces and directories are removed");
        return Ok(ExitCode::from(128 + signal as u8));
    }
    Ok(if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
