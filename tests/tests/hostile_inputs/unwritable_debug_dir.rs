//! A debug directory that is read-only or full, and a debug file past
//! the size limit: an error, and the file left whole.

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::checks::fails_with;
use crate::inputs::{conf_with, padded_conf};
use crate::process::{invocation, noop, run, Run};

fn cstring(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("no NUL in path")
}

/// A mount that is detached when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: plain syscall on a path we mounted.
        #[allow(unsafe_code)]
        unsafe {
            libc::umount2(cstring(&self.0).as_ptr(), libc::MNT_DETACH)
        };
    }
}

/// Bind-mounts `dir` read-only onto itself (needs CAP_SYS_ADMIN).
fn bind_read_only(dir: &Path) -> Option<Mount> {
    let p = cstring(dir);
    // SAFETY: plain syscalls with valid C strings.
    #[allow(unsafe_code)]
    unsafe {
        if libc::mount(
            p.as_ptr(),
            p.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ) != 0
        {
            return None;
        }
        let mount = Mount(dir.to_owned());
        let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
        if libc::mount(
            std::ptr::null(),
            p.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        ) != 0
        {
            return None;
        }
        Some(mount)
    }
}

/// Mounts a tmpfs of `bytes` on `dir` (needs CAP_SYS_ADMIN).
fn tiny_tmpfs(dir: &Path, bytes: usize) -> Option<Mount> {
    let p = cstring(dir);
    let fstype = CString::new("tmpfs").unwrap();
    let opts = CString::new(format!("size={bytes},mode=0755")).unwrap();
    // SAFETY: plain syscall with valid C strings.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            p.as_ptr(),
            fstype.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    (rc == 0).then(|| Mount(dir.to_owned()))
}

#[allow(unsafe_code)]
fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn no_mounts() -> bool {
    std::env::var_os("CNI_HOSTILE_NO_MOUNT").is_some_and(|v| v == "1")
}

#[test]
fn read_only_debug_dir() {
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let debug = ro.join("debug.json");
    let original = json!({"ReportResult": "{\"ok\":true}"}).to_string();
    fs::write(&debug, &original).unwrap();
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(conf_with("1.0.0", ""));
    // A read-only mount when we may mount; else permissions, enforced by
    // running as nobody when we are root (root ignores them).
    let _mount = if no_mounts() {
        None
    } else {
        bind_read_only(&ro)
    };
    if _mount.is_none() {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&debug, fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        if is_root() {
            inv.run_as = Some(65534);
        }
    }
    let out = run(&noop(), &inv);
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    assert_eq!(
        fs::read_to_string(&debug).unwrap(),
        original,
        "debug file changed"
    );
    eprintln!(
        "read-only debug dir ({}): {err:?}",
        if _mount.is_some() {
            "ro mount"
        } else {
            "permissions"
        }
    );
}

/// Runs ADD with a debug file in a directory with almost no room left,
/// with a stdin large enough that the rewritten debug file (which records
/// stdin) cannot fit. Returns the outcome, the original and the final
/// debug file, and the names left in its directory.
fn full_debug_dir() -> (Run, String, Vec<u8>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    fs::create_dir(&full).unwrap();
    let debug = full.join("debug.json");
    let original = json!({"ReportResult": "{\"ok\":true}"}).to_string();
    let conf = padded_conf(48 * 1024, b"p");
    let mut inv = invocation("ADD").debug(&debug).stdin(conf);
    let mount = if no_mounts() {
        None
    } else {
        tiny_tmpfs(&full, 64 * 1024)
    };
    if mount.is_some() {
        fs::write(&debug, &original).unwrap();
        // Fill what is left.
        let mut filler = fs::File::create(full.join("filler")).unwrap();
        let page = [0u8; 4096];
        while filler.write_all(&page).is_ok() {}
    } else {
        // The same failure without a mount: a file size limit.
        fs::write(&debug, &original).unwrap();
        inv.file_size_limit = Some(4096);
    }
    let out = run(&noop(), &inv);
    let after = fs::read(&debug).unwrap();
    let mut left: Vec<String> = fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    drop(mount);
    (out, original, after, left)
}

/// The rewritten debug file would fit in the blocks the file has, but not
/// under the file size limit: an error, and the file left as it was (the
/// noop rewrites a debug file in place only when that cannot fail).
#[test]
fn debug_file_beyond_the_size_limit_is_an_error_and_left_whole() {
    let dir = tempfile::tempdir().unwrap();
    let debug = dir.path().join("debug.json");
    let mut original = json!({"ReportResult": "{}"}).to_string().into_bytes();
    original.resize(8000, b' ');
    fs::write(&debug, &original).unwrap();
    // ~5.7 KB once recorded in base64: over 4096, under the 8 KiB the file
    // occupies.
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(padded_conf(4000, b"p"));
    inv.file_size_limit = Some(4096);
    let out = run(&noop(), &inv);
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    let after = fs::read(&debug).unwrap();
    assert!(
        after == original,
        "debug file changed: {} bytes, starting {:?}",
        after.len(),
        String::from_utf8_lossy(&after[..after.len().min(80)])
    );
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

#[test]
fn full_debug_dir_is_an_error() {
    let (out, _, _, _) = full_debug_dir();
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    eprintln!("full debug dir: {err:?}");
}

#[test]
fn full_debug_dir_leaves_the_debug_file_whole() {
    let (out, original, after, left) = full_debug_dir();
    let whole = after == original.as_bytes()
        || serde_json::from_slice::<Value>(&after).is_ok_and(|v| v["Command"] == "ADD");
    assert!(
        whole,
        "debug file half-written ({} bytes: {:?}...) after {out:?}",
        after.len(),
        String::from_utf8_lossy(&after[..after.len().min(120)])
    );
    // Nothing half-written left beside it either.
    assert!(
        left.iter().all(|n| n == "debug.json" || n == "filler"),
        "left in the debug dir: {left:?}"
    );
}
