//! Built-in delegates: a plugin that carries another plugin's code (bridge
//! carries host-local's) runs it in its own process instead of executing
//! it, when the binary the delegation would execute is that same plugin of
//! the same release.
//!
//! Why: a process costs a runtime and the kernel about a millisecond of
//! CPU (exec, page faults, exit), whatever the plugin does; in a burst of
//! pods, one process less per pod is what the node saves.
//!
//! How a binary says what it is: [`mark_builtin!`](crate::mark_builtin)
//! puts a mark (the plugin's name and release) in the ELF section
//! [`MARK_SECTION`]. A delegating binary registers the plugins it carries,
//! each with its mark ([`set_builtins`]); before executing a plugin of a
//! registered name, [`exec_plugin`](crate::exec_plugin) reads that section
//! of the file found on `CNI_PATH` (its ELF header, section table and
//! names: a few KiB) and runs the built-in only when the file carries the
//! same mark. Any other file of that name, the reference's binary, a
//! wrapper script or ours of another release, is executed as before.
//!
//! What stays the same: the plugin's environment (ours with the
//! invocation's `CNI_*` and trace variables), its stdin, its stdout and
//! stderr kept within [`STDOUT_LIMIT`](crate::STDOUT_LIMIT) and
//! [`STDERR_LIMIT`](crate::STDERR_LIMIT), its exit status, and how they
//! become the result or the error. What differs: an invocation with a
//! [`Deadline`](crate::Deadline) is always executed (a built-in cannot be
//! stopped from outside; delegations pass none), and a file not marked
//! executable runs when it is ours.
//!
//! Go: none; the reference always executes the delegate.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;

use cni_skel::{Env, ProcessEnv, TRACE_VARS};

use crate::limits::{STDERR_LIMIT, STDOUT_LIMIT};
use crate::raw::{Exit, RawOutput};

/// The ELF section a plugin binary's marks are in, each ended by a NUL.
pub const MARK_SECTION: &str = ".cni_builtin";

/// A built-in plugin's entry: its environment and stdin in, what it
/// printed on stdout and stderr out, and its exit status returned, as
/// [`cni_skel::dispatch`] does for a process.
pub type BuiltinMain = fn(&dyn Env, &[u8], &mut Vec<u8>, &mut Vec<u8>) -> i32;

/// A plugin linked into this binary, run in-process in place of a file of
/// its name that carries its mark.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The plugin's type: the file name a delegation looks for.
    pub name: &'static str,
    /// The mark the file must carry (what its binary gave
    /// [`mark_builtin!`](crate::mark_builtin)): the plugin's name and
    /// release.
    pub mark: &'static str,
    /// Runs it.
    pub main: BuiltinMain,
}

static BUILTINS: OnceLock<&'static [Builtin]> = OnceLock::new();

/// Registers the plugins this binary carries, once, before it delegates
/// (its entry point is the place). Later calls change nothing and return
/// `false`.
///
/// ```no_run
/// #![no_main]
/// use cni_skel::{BoxError, CheckSupport, Env, Plugin, Reply, Request};
/// use cni_types::NetConf;
///
/// /// The delegate this binary carries (an IPAM plugin, say).
/// struct MyIpam;
/// impl Plugin for MyIpam {
///     type Config = NetConf;
///     const CHECK: CheckSupport = CheckSupport::Unsupported;
///     fn add(&self, _req: &Request<NetConf>) -> Result<Reply, BoxError> {
///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
///     }
///     fn del(&self, _req: &Request<NetConf>) -> Result<(), BoxError> {
///         Ok(())
///     }
/// }
///
/// fn my_ipam(env: &dyn Env, stdin: &[u8], stdout: &mut Vec<u8>, stderr: &mut Vec<u8>) -> i32 {
///     let versions = cni_version::PluginInfo::all();
///     cni_skel::dispatch(&MyIpam, &versions, "", env, &mut &stdin[..], stdout, stderr)
/// }
///
/// /// Run in-process when the file `my-ipam` on `CNI_PATH` is a binary
/// /// that says `cni_invoke::mark_builtin!("my-ipam 1.0.0");`.
/// static CARRIED: [cni_invoke::Builtin; 1] = [cni_invoke::Builtin {
///     name: "my-ipam",
///     mark: "my-ipam 1.0.0",
///     main: my_ipam,
/// }];
///
/// # struct MyBridge;
/// # impl Plugin for MyBridge {
/// #     type Config = NetConf;
/// #     const CHECK: CheckSupport = CheckSupport::Unsupported;
/// #     fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
/// #         Ok(cni_invoke::delegate_add("my-ipam", req)?.into())
/// #     }
/// #     fn del(&self, _req: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
/// # }
/// cni_skel::plugin_main!(|| {
///     cni_invoke::set_builtins(&CARRIED);
///     cni_skel::try_run(&MyBridge, &cni_version::PluginInfo::all(), "my bridge")
/// });
/// ```
pub fn set_builtins(builtins: &'static [Builtin]) -> bool {
    BUILTINS.set(builtins).is_ok()
}

/// Puts `mark` (a `&str` constant: the plugin's name and release) in the
/// binary's [`MARK_SECTION`], so that a delegating plugin that carries
/// this plugin built in, with the same mark, runs it in-process instead of
/// executing this binary (see [`set_builtins`]). Write it once, at the
/// crate root of the plugin's binary.
///
/// ```no_run
/// #![no_main]
/// cni_invoke::mark_builtin!("my-host-local 1.0.0");
/// # cni_skel::plugin_main!(|| 0);
/// ```
#[macro_export]
macro_rules! mark_builtin {
    ($mark:expr) => {
        const _: () = {
            const MARK: &str = $mark;
            // SAFETY: a plain byte array in a section of its own name;
            // nothing refers to it, and no symbol of it is exported.
            #[allow(unsafe_code)]
            #[used]
            #[unsafe(link_section = ".cni_builtin")]
            static CNI_BUILTIN_MARK: [u8; MARK.len() + 1] = $crate::__mark_bytes(MARK);
        };
    };
}

/// The bytes [`mark_builtin!`] stores: `mark`, then a NUL. Not API.
#[doc(hidden)]
pub const fn __mark_bytes<const N: usize>(mark: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let bytes = mark.as_bytes();
    let mut i = 0;
    while i < bytes.len() && i + 1 < N {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// The built-in to run in place of `plugin`, if one of its name is
/// registered and the file carries its mark.
fn builtin_for(plugin: &Path) -> Option<&'static Builtin> {
    let name = plugin.file_name()?.to_str()?;
    let builtin = BUILTINS.get()?.iter().find(|b| b.name == name)?;
    marks(plugin)?
        .split(|b| *b == 0)
        .any(|m| m == builtin.mark.as_bytes())
        .then_some(builtin)
}

/// Runs `plugin` in-process when it is a registered built-in of ours
/// (see the module docs); `None` when it must be executed.
pub(crate) fn run_builtin(
    plugin: &Path,
    env: &[(&'static str, String)],
    stdin: &[u8],
) -> Option<RawOutput> {
    let builtin = builtin_for(plugin)?;
    let env = ChildEnv { invocation: env };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let status = (builtin.main)(&env, stdin, &mut stdout, &mut stderr);
    let stdout_dropped = cut(&mut stdout, STDOUT_LIMIT);
    let stderr_dropped = cut(&mut stderr, STDERR_LIMIT);
    Some(RawOutput {
        exit: Exit::Status(status),
        stdout,
        stderr,
        stdout_dropped,
        stderr_dropped,
    })
}

/// Keeps the first `limit` bytes, as the reader of a pipe does; how many
/// were dropped.
fn cut(bytes: &mut Vec<u8>, limit: usize) -> u64 {
    let dropped = bytes.len().saturating_sub(limit);
    bytes.truncate(limit);
    dropped as u64
}

/// What an executed plugin's environment would be: the invocation's
/// variables, then ours without the trace context (see
/// [`exec_plugin`](crate::exec_plugin)).
struct ChildEnv<'a> {
    invocation: &'a [(&'static str, String)],
}

impl Env for ChildEnv<'_> {
    fn var(&self, name: &str) -> Option<OsString> {
        match self.invocation.iter().rev().find(|(k, _)| *k == name) {
            Some((_, value)) => Some(value.into()),
            None if TRACE_VARS.contains(&name) => None,
            None => ProcessEnv.var(name),
        }
    }
}

/// The most a section table, its names or the marks may take: far more
/// than a plugin binary's (about 30 sections, a few hundred bytes of
/// names); a file claiming more is not ours.
const MAX_TABLE: usize = 64 << 10;

/// The contents of `path`'s [`MARK_SECTION`], if it is a 64-bit
/// little-endian ELF file that has one. Reads the ELF header, the section
/// table, the section names and the section: four reads, each bounded.
fn marks(path: &Path) -> Option<Vec<u8>> {
    let file = File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at =
        |b: &[u8], at: usize| Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let u32_at =
        |b: &[u8], at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let u64_at =
        |b: &[u8], at: usize| Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?));
    let table_at = u64_at(&header, 0x28)?;
    let (entry, count, names) = (
        usize::from(u16_at(&header, 0x3a)?),
        usize::from(u16_at(&header, 0x3c)?),
        usize::from(u16_at(&header, 0x3e)?),
    );
    if entry != 64 || count == 0 || names >= count || entry * count > MAX_TABLE {
        return None;
    }
    let read = |at: u64, len: u64| -> Option<Vec<u8>> {
        let len = usize::try_from(len).ok().filter(|l| *l <= MAX_TABLE)?;
        let mut out = vec![0; len];
        file.read_exact_at(&mut out, at).ok()?;
        Some(out)
    };
    let table = read(table_at, (entry * count) as u64)?;
    // A section header: name (offset in the names) at 0, file offset at
    // 0x18, size at 0x20.
    let section = |i: usize| {
        let h = table.get(i * entry..(i + 1) * entry)?;
        Some((u32_at(h, 0)?, u64_at(h, 0x18)?, u64_at(h, 0x20)?))
    };
    let (_, names_at, names_len) = section(names)?;
    let names = read(names_at, names_len)?;
    (0..count).find_map(|i| {
        let (name, at, len) = section(i)?;
        let name = names.get(usize::try_from(name).ok()?..)?;
        let name = &name[..name.iter().position(|b| *b == 0)?];
        (name == MARK_SECTION.as_bytes()).then(|| read(at, len))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::mark_builtin!("cni-invoke test mark 1");
    crate::mark_builtin!("cni-invoke test mark 2");

    #[test]
    fn a_binary_carries_every_mark_it_was_given() {
        let exe = std::env::current_exe().unwrap();
        let marks = marks(&exe).expect("the test binary's marks");
        let marks: Vec<&[u8]> = marks.split(|b| *b == 0).filter(|m| !m.is_empty()).collect();
        assert!(marks.contains(&&b"cni-invoke test mark 1"[..]), "{marks:?}");
        assert!(marks.contains(&&b"cni-invoke test mark 2"[..]), "{marks:?}");
    }

    #[test]
    fn files_that_are_not_marked_elf_binaries_carry_no_marks() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let cases: [(&str, &[u8]); 4] = [
            ("script", b"#!/bin/sh\nexec /usr/lib/cni/host-local\n"),
            ("empty", b""),
            ("truncated", &exe[..200]),
            ("big-endian", &[&exe[..5], &[2], &exe[6..]].concat()),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(marks(&path), None, "{name}");
        }
        assert_eq!(marks(&dir.path().join("absent")), None);
        // An ELF binary without the section: any on the machine will do.
        assert_eq!(marks(Path::new("/bin/sh")), None);
    }

    #[test]
    fn the_child_environment_is_the_invocation_over_ours_without_our_trace_context() {
        let invocation = [("CNI_COMMAND", "ADD".to_string())];
        let env = ChildEnv {
            invocation: &invocation,
        };
        assert_eq!(env.var("CNI_COMMAND"), Some("ADD".into()));
        assert_eq!(env.var("PATH"), std::env::var_os("PATH"));
        assert_eq!(env.var("TRACEPARENT"), None);
    }

    #[test]
    fn output_past_the_limits_is_cut_and_counted() {
        let mut bytes = vec![7; 10];
        assert_eq!(cut(&mut bytes, 4), 6);
        assert_eq!(bytes, [7; 4]);
        assert_eq!(cut(&mut bytes, 4), 0);
    }
}
