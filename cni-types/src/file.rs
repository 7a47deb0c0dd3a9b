//! Reading a file a plugin keeps its state in, where a link or a special
//! file may have been put in its place.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// At most `limit` bytes of the regular file at `path`.
///
/// A plugin's state files (IPAM reservations, `tuning`'s backups) live in
/// directories others can write to, so this never follows a symbolic link
/// at `path` (`O_NOFOLLOW`, an `ELOOP` error), never waits on a FIFO
/// (`O_NONBLOCK`) and refuses anything but a regular file; a longer file
/// is an error rather than read whole. `NotFound` comes back as the kind
/// of the error, so a caller can tell "absent" from "bad".
///
/// ```
/// use cni_types::read_regular_file;
///
/// let dir = std::env::temp_dir();
/// let path = dir.join(format!("read-regular-file-doc.{}", std::process::id()));
/// std::fs::write(&path, "10.1.2.3").unwrap();
/// assert_eq!(read_regular_file(&path, 64).unwrap(), b"10.1.2.3");
/// assert!(read_regular_file(&path, 4).is_err());
/// std::fs::remove_file(&path).unwrap();
/// let absent = read_regular_file(&path, 64).unwrap_err();
/// assert_eq!(absent.kind(), std::io::ErrorKind::NotFound);
/// ```
///
/// Go: `os.ReadFile`, which the reference plugins use and which follows
/// links, blocks on a FIFO and reads without a bound.
pub fn read_regular_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!("longer than {limit} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_directories_and_long_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_regular_file(&file, 5).unwrap(), b"12345");
        let err = read_regular_file(&file, 4).unwrap_err();
        assert_eq!(err.to_string(), "longer than 4 bytes");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let err = read_regular_file(&link, 64).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");

        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_regular_file(&fifo, 64).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");

        let err = read_regular_file(dir.path(), 64).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");
    }
}
