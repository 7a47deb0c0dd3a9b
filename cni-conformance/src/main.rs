//! `cni-conformance [OPTIONS] PLUGIN`: arguments only; the library does
//! the rest.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use cni_conformance::{cases, run, Kind, NetnsChoice, Selection, Target};
use cni_types::SpecVersion;

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
  --timeout SECS       per execution of the plugin (default: 10)
  --json FILE          write the report as JSON
  --junit FILE         write the report as JUnit XML
  --list               list the checks and exit

Exit status: 0 when no MUST check fails, 1 when one does, 2 on usage or
setup errors.";

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
                let secs: f64 = v.parse().with_context(|| format!("--timeout {v:?}"))?;
                timeout = Some(Duration::from_secs_f64(secs));
            }
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

fn try_main() -> anyhow::Result<ExitCode> {
    let Some(options) = parse(std::env::args().skip(1).collect())? else {
        return Ok(ExitCode::SUCCESS);
    };
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
    Ok(if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
