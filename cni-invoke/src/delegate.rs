//! Delegation (spec section 4): a plugin running another plugin, typically
//! its IPAM plugin, "with the same environment and configuration" it was
//! given.

use cni_skel::{BoxError, Command, Request};
use cni_types::{CniResult, Code, Error, SpecVersion};

use crate::{exec_with_result, exec_without_result, find_in_path, Invocation};

/// The delegate's invocation: the calling plugin's own parameters with
/// another command. `CNI_PATH` is needed to find the delegate: when the
/// runtime did not pass it, code 4 naming it.
fn invocation<C>(command: Command, req: &Request<C>) -> Result<Invocation, Error> {
    if req.path.is_empty() {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "required env variables [CNI_PATH] missing",
        )
        .with_details("CNI_PATH is needed to find the delegated plugin"));
    }
    let args = req
        .args
        .split(';')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect();
    Ok(Invocation {
        command,
        container_id: req.container_id.clone(),
        netns: req.sandbox(),
        ifname: req.ifname.clone(),
        args,
        path: req.path.clone(),
        // The plugin's own caller's span: the delegate is part of its work.
        trace: req.trace.clone(),
        ..Invocation::default()
    })
}

fn run<C>(command: Command, plugin_type: &str, req: &Request<C>) -> Result<(), Error> {
    let plugin = find_in_path(plugin_type, &req.path)?;
    exec_without_result(&plugin, &invocation(command, req)?, &req.stdin)
}

/// ADD of `plugin_type` with the configuration this plugin received; the
/// result comes back in the configuration's version.
///
/// Go: `invoke.DelegateAdd`.
pub fn delegate_add<C>(plugin_type: &str, req: &Request<C>) -> Result<CniResult, Error> {
    let invocation = invocation(Command::Add, req)?;
    let plugin = find_in_path(plugin_type, &req.path)?;
    let result = exec_with_result(&plugin, &invocation, &req.stdin, &req.config_version)?;
    let version = SpecVersion::parse(&req.config_version)
        .map_err(|e| Error::new(Code::INCOMPATIBLE_CNI_VERSION, e.to_string()))?;
    result.into_version(&version).map_err(|e| {
        Error::new(
            Code::INTERNAL,
            format!("failed to convert the result of {plugin_type} to {version}"),
        )
        .with_details(e.to_string())
    })
}

/// CHECK of `plugin_type`.
///
/// Go: `invoke.DelegateCheck`.
pub fn delegate_check<C>(plugin_type: &str, req: &Request<C>) -> Result<(), Error> {
    run(Command::Check, plugin_type, req)
}

/// DEL of `plugin_type`.
///
/// Go: `invoke.DelegateDel`.
pub fn delegate_del<C>(plugin_type: &str, req: &Request<C>) -> Result<(), Error> {
    run(Command::Del, plugin_type, req)
}

/// GC of `plugin_type` (the configuration carries the valid attachments).
///
/// Go: `invoke.DelegateGC`.
pub fn delegate_gc<C>(plugin_type: &str, req: &Request<C>) -> Result<(), Error> {
    run(Command::Gc, plugin_type, req)
}

/// STATUS of `plugin_type`; its error (e.g. code 50) is the answer.
///
/// Go: `invoke.DelegateStatus`.
pub fn delegate_status<C>(plugin_type: &str, req: &Request<C>) -> Result<(), Error> {
    run(Command::Status, plugin_type, req)
}

/// Delegated ADD, then `rest` with its result; if `rest` fails, the
/// delegate's DEL runs before the error is returned, so a failed ADD leaves
/// no reservation behind ("If the plugin fails after a successful delegated
/// ADD, it should run the delegated DEL" in spirit of spec section 4).
///
/// A failed delegated ADD returns its error and runs no DEL: whatever the
/// delegate holds then is an earlier ADD's. That is what keeps a repeated
/// ADD of a live attachment (which then fails, its interface existing)
/// from releasing the live attachment's addresses, given a delegate that
/// refuses an ADD for an attachment that already holds an address: "a
/// runtime should not call `ADD` twice (without an intervening DEL)"
/// (SPEC-1.0.0), and host-local and `cni-ipam` (code 104,
/// `DUPLICATE_ALLOCATION`) refuse it. An IPAM plugin that answers a
/// repeated ADD with the address held instead cannot be cleaned up after
/// safely by anyone; do not pair one with this function.
///
/// `rest` may fail with any error that converts into a [`BoxError`].
///
/// ```no_run
/// # use cni_skel::{BoxError, Request};
/// # fn setup(r: &cni_types::CniResult) -> Result<cni_types::CniResult, cni_types::Error> { Ok(r.clone()) }
/// # fn f(req: &Request<cni_types::NetConf>) -> Result<cni_types::CniResult, BoxError> {
/// let ipam = req.config.ipam.as_ref().map(|i| i.ipam_type.clone()).unwrap_or_default();
/// let result = cni_invoke::add_with_cleanup(&ipam, req, |ipam_result| setup(&ipam_result))?;
/// # Ok(result) }
/// ```
///
/// Go: none; `ipam.ExecAdd` then `ipam.ExecDel` on failure, as the
/// reference plugins write it by hand.
pub fn add_with_cleanup<C, T, E>(
    plugin_type: &str,
    req: &Request<C>,
    rest: impl FnOnce(CniResult) -> Result<T, E>,
) -> Result<T, BoxError>
where
    E: Into<BoxError>,
{
    let result = delegate_add(plugin_type, req)?;
    match rest(result) {
        Ok(t) => Ok(t),
        Err(err) => {
            release_after_failed_add(plugin_type, req);
            Err(err.into())
        }
    }
}

/// The delegate's DEL after the plugin's ADD failed past a successful
/// delegated ADD (what [`add_with_cleanup`] runs): its own failure is
/// logged to stderr, the ADD's error being the one to return. For a
/// plugin that ran the delegated ADD itself (on another thread, say).
///
/// Go: none; `ipam.ExecDel` on a failure path, as the reference plugins
/// write it by hand.
pub fn release_after_failed_add<C>(plugin_type: &str, req: &Request<C>) {
    if let Err(cleanup) = delegate_del(plugin_type, req) {
        req.log(format_args!(
            "delegated DEL of {plugin_type} after a failed ADD also failed: {cleanup}"
        ));
    }
}
