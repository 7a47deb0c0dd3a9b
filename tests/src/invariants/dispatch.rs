//! `dispatch`: an arbitrary environment and stdin through the in-process
//! harness, for two plugins (the noop and [`Echo`], which reaches every
//! part of the SDK a plugin can).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, TestRequest};
use cni_types::{Extra, Interface, IpConfig, NetConf, Result100, SpecVersion};
use cni_version::PluginInfo;
use serde_json::Value;

use super::answer::{check_result_json, check_stdout, Printed};
use super::fail;

/// Splits a `dispatch` input into environment and stdin: `KEY=VALUE`
/// entries each ended by NUL, then an empty entry (or the end of the
/// input), then stdin. A repeated key: the last one wins.
pub fn decode_invocation(data: &[u8]) -> (BTreeMap<String, OsString>, Vec<u8>) {
    let mut env = BTreeMap::new();
    let mut rest = data;
    loop {
        let Some(nul) = rest.iter().position(|b| *b == 0) else {
            // No terminator: what is left is stdin.
            return (env, rest.to_vec());
        };
        let entry = &rest[..nul];
        rest = &rest[nul + 1..];
        if entry.is_empty() {
            return (env, rest.to_vec());
        }
        let (key, value) = match entry.iter().position(|b| *b == b'=') {
            Some(eq) => (&entry[..eq], &entry[eq + 1..]),
            None => (entry, &b""[..]),
        };
        env.insert(
            String::from_utf8_lossy(key).into_owned(),
            OsString::from_vec(value.to_vec()),
        );
    }
}

/// The inverse of [`decode_invocation`].
pub fn encode_invocation(env: &[(&str, &[u8])], stdin: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in env {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v);
        out.push(0);
    }
    out.push(0);
    out.extend_from_slice(stdin);
    out
}

/// A plugin that uses every part of the SDK a plugin can reach: a typed
/// configuration with `prevResult`, `CNI_ARGS`, GC attachments, and a
/// result converted to the configuration's version.
#[derive(Debug, Default, Clone, Copy)]
pub struct Echo;

impl Plugin for Echo {
    type Config = NetConf<Extra>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let args = req.cni_args()?;
        if let Some(prev) = &req.config.prev_result {
            return Ok(prev.clone().into());
        }
        let mut result = Result100::new(SpecVersion::V1_1_0);
        result.interfaces.push(Interface {
            sandbox: req
                .netns
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..Interface::named(req.ifname.clone())
        });
        let address = args.get("IP").unwrap_or("10.1.0.5/16");
        let address = address.parse().map_err(|e| {
            cni_types::Error::new(cni_types::Code::INVALID_ENVIRONMENT_VARIABLES, "bad IP")
                .with_details(format!("{address:?}: {e}"))
        })?;
        let mut ip = IpConfig::new(address, None);
        ip.interface = Some(0);
        result.ips.push(ip);
        Ok(result.into())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        req.cni_args()?;
        if let Some(prev) = &req.config.prev_result {
            prev.to_current()?;
        }
        Ok(())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        req.valid_attachments()?;
        Ok(())
    }
}

/// Checks a dispatcher answer beyond [`check_stdout`]: exit status 0 or 1,
/// errors name a version, VERSION prints the plugin's versions, ADD prints
/// a result that parses back in the version it names, other commands print
/// nothing.
fn check_dispatch_answer(
    env: &BTreeMap<String, OsString>,
    versions: &PluginInfo,
    out: &cni_skel::Outcome,
) -> Result<(), String> {
    let printed = check_stdout(out.exit_code, &out.stdout)?;
    let command = env
        .get("CNI_COMMAND")
        .map(|c| c.as_encoded_bytes().to_vec());
    match printed {
        Printed::Error(err) => {
            if out.exit_code != 1 {
                return Err(format!("error with exit status {}", out.exit_code));
            }
            if err.cni_version.is_none() {
                return Err(format!("error without cniVersion: {err:?}"));
            }
        }
        Printed::Nothing => {
            if matches!(command.as_deref(), Some(b"ADD" | b"VERSION")) {
                return Err("ADD/VERSION succeeded with nothing on stdout".into());
            }
        }
        Printed::Document(doc) => match command.as_deref() {
            Some(b"VERSION") => {
                let supported: Vec<&str> = doc
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let want: Vec<&str> = versions.supported().iter().map(String::as_str).collect();
                if supported != want {
                    return Err(format!("VERSION answer {doc} lists other versions"));
                }
                if !doc.get("cniVersion").is_some_and(Value::is_string) {
                    return Err(format!("VERSION answer {doc} without cniVersion"));
                }
            }
            Some(b"ADD") => {
                let version = doc
                    .get("cniVersion")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("ADD result without cniVersion: {doc}"))?;
                let version = SpecVersion::parse(version)
                    .map_err(|e| format!("ADD result in an unknown version: {e}"))?;
                check_result_json(&version, &out.stdout)?;
            }
            _ => return Err(format!("{command:?} printed {doc}")),
        },
    }
    Ok(())
}

/// The `dispatch` target: the environment and stdin of the input through
/// [`cni_skel::dispatch`] (via [`TestRequest`]) for [`Echo`] (with the
/// noop's version list, which has an invalid entry, and no about string)
/// and for the `dns-mac` sample (every version, an about string).
pub fn fuzz_dispatch(data: &[u8]) {
    let (env, stdin) = decode_invocation(data);
    let mut req = TestRequest::new("").stdin(stdin.clone());
    for (k, v) in &env {
        req = req.env(k, v.clone());
    }
    let noop_versions = PluginInfo::new(plugins_sample::noop::DEFAULT_VERSIONS);
    let out = req.run(&Echo, &noop_versions);
    if let Err(e) = check_dispatch_answer(&env, &noop_versions, &out) {
        fail(
            "dispatch (echo)",
            data,
            format_args!("{e}\noutcome: {out:?}"),
        );
    }
    let all = PluginInfo::all();
    let out = req
        .about(plugins_sample::dns_mac::ABOUT)
        .run(&plugins_sample::dns_mac::DnsMac, &all);
    if let Err(e) = check_dispatch_answer(&env, &all, &out) {
        fail(
            "dispatch (dns-mac)",
            data,
            format_args!("{e}\noutcome: {out:?}"),
        );
    }
}
