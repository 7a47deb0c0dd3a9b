//! host-local's on-disk format: what a reservation file holds, and reading
//! a file of the store without following links or reading without bound.

use std::fs;
use std::io;
use std::net::IpAddr;
use std::path::Path;

use cni_types::{read_regular_file, Attachment};
use nix::libc;

use super::LINE_BREAK;
use crate::store::Owner;

/// A reservation file's content: `<containerID>\r\n<ifname>`.
pub fn owner_key(id: &str, ifname: &str) -> String {
    format!("{}{LINE_BREAK}{ifname}", id.trim())
}

/// Reads a reservation file's content as host-local does: surrounding white
/// space removed, then `<id>\r\n<ifname>` or `<id>`. Anything else (not
/// UTF-8, control characters, empty) is [`Owner::Unknown`].
pub fn parse_owner(bytes: &[u8]) -> Owner {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Owner::Unknown("content is not text".to_owned());
    };
    let text = text.trim();
    let (id, ifname) = match text.split_once(LINE_BREAK) {
        Some((id, ifname)) => (id, Some(ifname)),
        None => (text, None),
    };
    let clean = |s: &str| !s.is_empty() && !s.chars().any(char::is_control);
    match ifname {
        _ if !clean(id) => Owner::Unknown("content is not a container id".to_owned()),
        Some(i) if !clean(i) => {
            Owner::Unknown("content is not a container id and interface".to_owned())
        }
        Some(i) => Owner::Attachment(Attachment {
            container_id: id.to_owned(),
            ifname: i.to_owned(),
        }),
        None => Owner::Container(id.to_owned()),
    }
}

/// The address a directory entry is named after, if any.
pub(super) fn address_of(entry: &fs::DirEntry) -> Option<IpAddr> {
    entry.file_name().to_str()?.parse().ok()
}

/// What a file of the store holds, read.
pub(super) enum Content {
    /// Its bytes, at most the limit.
    Bytes(Vec<u8>),
    /// More than the limit.
    TooLong,
    /// Not a regular file (a link, or swapped in after the listing).
    NotRegular,
}

/// At most `limit` bytes of the regular file at `path`, never through a
/// link ([`read_regular_file`]). An error means the content could not be
/// read (it may be anyone's reservation); a file that is no reservation by
/// its kind or size is a [`Content`].
pub(super) fn read_entry(path: &Path, limit: u64) -> io::Result<Content> {
    match read_regular_file(path, limit) {
        Ok(bytes) => Ok(Content::Bytes(bytes)),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Ok(Content::NotRegular),
        // read_regular_file's own refusals (too long, not a regular
        // file) carry no OS error.
        Err(e) if e.raw_os_error().is_none() => match fs::symlink_metadata(path) {
            Ok(m) if m.is_file() => Ok(Content::TooLong),
            _ => Ok(Content::NotRegular),
        },
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservation_content_is_read_as_host_local_writes_it() {
        let attachment = |id: &str, ifname: &str| {
            Owner::Attachment(Attachment {
                container_id: id.into(),
                ifname: ifname.into(),
            })
        };
        assert_eq!(parse_owner(b"c1\r\neth0"), attachment("c1", "eth0"));
        assert_eq!(parse_owner(b" c1\r\neth0\n"), attachment("c1", "eth0"));
        assert_eq!(parse_owner(b"old\n"), Owner::Container("old".into()));
        for garbage in [&b""[..], b"\xff\xfe", b"a\nb", b"c1\r\n\x01"] {
            assert!(
                matches!(parse_owner(garbage), Owner::Unknown(_)),
                "{garbage:?}"
            );
        }
    }
}
