//! `host-local`: [`Ipam`] over the file store under the reference IPAM
//! plugin's name, as its binary runs it and as a plugin that carries it
//! built in runs it in-process ([`run`], `cni_invoke::Builtin`).

use cni_skel::Env;
use cni_version::PluginInfo;

use crate::store::file::FileStore;
use crate::Ipam;

/// The plugin's type, the file name delegations look for.
pub const NAME: &str = "host-local";

/// What the binary says when run by hand.
pub const ABOUT: &str = concat!(
    "CNI host-local plugin v",
    env!("CARGO_PKG_VERSION"),
    " (cni-rs)"
);

/// This release's mark: the binary carries it (`cni_invoke::mark_builtin!`),
/// and a plugin that carries host-local built in runs it in place of a
/// file that carries the same.
pub const MARK: &str = concat!("cni-rs host-local ", env!("CARGO_PKG_VERSION"));

/// host-local as a built-in: what a plugin that delegates its IPAM
/// registers with [`cni_invoke::set_builtins`] to run our `host-local` in
/// its own process when the `host-local` on `CNI_PATH` is ours of the
/// same release (it carries [`MARK`]), one process less per ADD, DEL,
/// CHECK, GC and STATUS. Any other file of that name is executed as
/// before.
///
/// ```no_run
/// cni_invoke::set_builtins(&cni_ipam::host_local::BUILTINS);
/// ```
pub static BUILTINS: [cni_invoke::Builtin; 1] = [cni_invoke::Builtin {
    name: NAME,
    mark: MARK,
    main: run,
}];

/// The plugin.
pub fn plugin() -> Ipam<FileStore> {
    Ipam::new(NAME)
}

/// One execution, as its process would run it: the environment and
/// stdin in, stdout and stderr out, the exit status returned (a
/// `cni_invoke::BuiltinMain`).
pub fn run(env: &dyn Env, stdin: &[u8], stdout: &mut Vec<u8>, stderr: &mut Vec<u8>) -> i32 {
    let mut stdin = stdin;
    cni_skel::dispatch(
        &plugin(),
        &PluginInfo::all(),
        ABOUT,
        env,
        &mut stdin,
        stdout,
        stderr,
    )
}
