//! The debug file through which tests drive the noop plugin, in the
//! reference's format (`plugins/test/noop/debug`): Go's JSON encoding of a
//! struct without tags, so keys are the field names, read
//! case-insensitively and written back in field order.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What went wrong with the debug file or the command log, naming the
/// file, in the reference noop's words.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be opened or read.
    #[error("open {}: {cause}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The system's answer.
        cause: io::Error,
    },
    /// It could not be written.
    #[error("write {}: {cause}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The system's answer.
        cause: io::Error,
    },
    /// The new content, written beside it, could not replace it.
    #[error("rename {}: {cause}", path.display())]
    Rename {
        /// The temporary file.
        path: PathBuf,
        /// The system's answer.
        cause: io::Error,
    },
    /// The debug file is not what the reference's decoder reads.
    #[error("debug file {}: {cause}", path.display())]
    Debug {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        cause: Malformed,
    },
    /// The command log is not a JSON list of entries.
    #[error("command log {}: {cause}", path.display())]
    CommandLog {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        cause: serde_json::Error,
    },
}

/// Debug-file JSON the reference's decoder refuses: the field, when one
/// is to blame, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}{cause}", field.map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct Malformed {
    /// The field whose value is of the wrong type.
    pub field: Option<&'static str>,
    /// The decoder's answer.
    pub cause: serde_json::Error,
}

/// What the test asks the plugin to do, and what the plugin recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Debug<'a> {
    /// Printed on stdout: verbatim, or `PASSTHROUGH` / `INJECT-DNS`.
    pub report_result: String,
    /// Makes the plugin fail with this message.
    pub report_error: String,
    /// The code of that error (999 when 0).
    pub report_error_code: u32,
    /// Written to stderr.
    pub report_stderr: String,
    /// Replaces the supported versions (`null`: the defaults).
    pub report_version_support: Option<Vec<String>>,
    /// Exit status after printing, when > 0.
    pub exit_with_code: i64,
    /// The command the plugin received.
    pub command: String,
    /// The arguments the plugin received.
    pub cmd_args: CmdArgs<'a>,
}

/// The reference skel's `CmdArgs`, as the reference encodes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CmdArgs<'a> {
    /// `CNI_CONTAINERID`.
    #[serde(rename = "ContainerID")]
    pub container_id: String,
    /// `CNI_NETNS`.
    #[serde(rename = "Netns")]
    pub netns: String,
    /// `CNI_IFNAME`.
    #[serde(rename = "IfName")]
    pub ifname: String,
    /// `CNI_ARGS`.
    #[serde(rename = "Args")]
    pub args: String,
    /// `CNI_PATH`.
    #[serde(rename = "Path")]
    pub path: String,
    /// `CNI_NETNS_OVERRIDE`.
    #[serde(rename = "NetnsOverride")]
    pub netns_override: String,
    /// stdin, base64 (Go's encoding of a byte slice); borrowed, and encoded
    /// straight into the output, so a large stdin is not copied.
    #[serde(rename = "StdinData", serialize_with = "base64")]
    pub stdin_data: &'a [u8],
}

/// One entry of the command log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdLogEntry {
    /// The command.
    #[serde(rename = "Command")]
    pub command: String,
    /// Its arguments, as in the debug file.
    #[serde(rename = "CmdArgs")]
    pub cmd_args: Value,
}

const FIELDS: [&str; 6] = [
    "ReportResult",
    "ReportError",
    "ReportErrorCode",
    "ReportStderr",
    "ReportVersionSupport",
    "ExitWithCode",
];

impl Debug<'_> {
    /// Reads the debug file. Errors say which file and what was wrong.
    pub fn read(path: &Path) -> Result<Debug<'static>, FileError> {
        let bytes = fs::read(path).map_err(|cause| FileError::Open {
            path: path.into(),
            cause,
        })?;
        Self::parse(&bytes).map_err(|cause| FileError::Debug {
            path: path.into(),
            cause,
        })
    }

    /// Parses debug-file JSON with the reference decoder's key matching.
    pub fn parse(bytes: &[u8]) -> Result<Debug<'static>, Malformed> {
        let [result, error, code, stderr, versions, exit] = cni_version::peek_fields(bytes, FIELDS)
            .map_err(|cause| Malformed { field: None, cause })?;
        fn field<T: serde::de::DeserializeOwned + Default>(
            name: &'static str,
            v: Option<Value>,
        ) -> Result<T, Malformed> {
            v.map(|v| {
                serde_json::from_value(v).map_err(|cause| Malformed {
                    field: Some(name),
                    cause,
                })
            })
            .transpose()
            .map(Option::unwrap_or_default)
        }
        Ok(Debug {
            report_result: field("ReportResult", result)?,
            report_error: field("ReportError", error)?,
            report_error_code: field("ReportErrorCode", code)?,
            report_stderr: field("ReportStderr", stderr)?,
            report_version_support: field("ReportVersionSupport", versions)?,
            exit_with_code: field("ExitWithCode", exit)?,
            ..Debug::default()
        })
    }

    /// Writes the debug file back, whole or not at all when the disk is
    /// full or the file size limit is reached (the reference truncates it
    /// and may leave it half-written).
    ///
    /// When the new content fits in the space the file already occupies on
    /// a file system that overwrites in place (ext4, XFS, tmpfs), it is
    /// rewritten in place: no block is allocated, so the write cannot run
    /// out of space, and it costs a fraction of a new file renamed over the
    /// old one (on ext4 that rename starts writeback of the new file: a
    /// quarter of a noop ADD's wall time in `bench/process`). A shorter
    /// content is padded with spaces (still the same JSON) before the file
    /// is cut to length, so no moment shows a mix of old and new. Otherwise
    /// it goes to a temporary file beside it, renamed over it; where no
    /// file can be created beside it (a read-only directory), it is
    /// truncated and rewritten as the reference does. Like the reference,
    /// two plugins writing one debug file at the same time are not
    /// supported.
    pub fn write(&self, path: &Path) -> Result<(), FileError> {
        if self.cmd_args.stdin_data.len() > IN_MEMORY_STDIN {
            // Streamed, so memory stays bounded by stdin, not by its base64.
            return replace(path, |file| {
                let mut out = BufWriter::new(file);
                serde_json::to_writer(&mut out, self)?;
                out.into_inner().map(drop).map_err(|e| e.into_error())
            });
        }
        let write_failed = |cause| FileError::Write {
            path: path.into(),
            cause,
        };
        // Sized for the whole file at once (stdin in base64 and the rest).
        let mut bytes = Vec::with_capacity(self.cmd_args.stdin_data.len() / 3 * 4 + 1024);
        serde_json::to_writer(&mut bytes, self).map_err(|e| write_failed(e.into()))?;
        if let Ok(file) = OpenOptions::new().write(true).open(path) {
            if let Some(old_len) = overwritable(&file, bytes.len()) {
                return overwrite(&file, &bytes, old_len).map_err(write_failed);
            }
        }
        replace(path, |mut file| file.write_all(&bytes))
    }
}

/// Above this much stdin, the debug file (which records stdin in base64) is
/// streamed to a new file rather than built in memory.
const IN_MEMORY_STDIN: usize = 256 * 1024;

/// Replaces the file with what `write` writes: into a temporary file beside
/// it (its mode, 0600 when new), renamed over it, so a failure leaves the
/// old file whole; where no file can be created beside it (a read-only
/// directory), truncated and rewritten in place as the reference does.
fn replace(path: &Path, write: impl FnOnce(&File) -> io::Result<()>) -> Result<(), FileError> {
    let write_err = |cause| FileError::Write {
        path: path.into(),
        cause,
    };
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let tmp = path.with_file_name(format!(
        ".{}.tmp.{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
    {
        Ok(file) => {
            // Not fsynced: a test double's file needs to be whole for the
            // next reader, not durable across a crash.
            let written = write(&file).map_err(write_err).and_then(|()| {
                fs::rename(&tmp, path).map_err(|cause| FileError::Rename {
                    path: tmp.clone(),
                    cause,
                })
            });
            if written.is_err() {
                let _ = fs::remove_file(&tmp);
            }
            written
        }
        Err(_) => write(
            &OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(path)
                .map_err(|cause| FileError::Open {
                    path: path.into(),
                    cause,
                })?,
        )
        .map_err(write_err),
    }
}

/// The file's current length when `len` bytes can be written over it
/// without allocating: within the blocks it has (or has reserved), on a
/// file system that overwrites in place, and under the file size limit.
fn overwritable(file: &File, len: usize) -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource};
    use nix::sys::statfs::{fstatfs, FsType, EXT4_SUPER_MAGIC, TMPFS_MAGIC};
    use std::os::unix::fs::MetadataExt;
    // XFS's magic ("XFSB"): nix only names it on glibc.
    const XFS_SUPER_MAGIC: FsType = FsType(0x5846_5342);

    let len = u64::try_from(len).ok()?;
    let meta = file.metadata().ok()?;
    let fs_type = fstatfs(file).ok()?.filesystem_type();
    let in_place = [EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, TMPFS_MAGIC].contains(&fs_type);
    let (size_limit, _) = getrlimit(Resource::RLIMIT_FSIZE).ok()?;
    (in_place && meta.is_file() && len <= meta.blocks().saturating_mul(512) && len <= size_limit)
        .then_some(meta.len())
}

/// Writes `bytes` over the file's first `old_len` bytes, padding a shorter
/// content with JSON whitespace in the same write, then cuts it to length.
fn overwrite(file: &File, bytes: &[u8], old_len: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;

    let new_len = bytes.len() as u64;
    if new_len >= old_len {
        return file.write_all_at(bytes, 0);
    }
    let padded_len = usize::try_from(old_len).map_err(std::io::Error::other)?;
    let mut padded = Vec::with_capacity(padded_len);
    padded.extend_from_slice(bytes);
    padded.resize(padded_len, b' ');
    file.write_all_at(&padded, 0)?;
    file.set_len(new_len)
}

/// Appends an entry to the command log, which must exist (as in the
/// reference); an empty file is an empty log.
pub fn append_command_log(path: &Path, entry: CmdLogEntry) -> Result<(), FileError> {
    let open_failed = |cause| FileError::Open {
        path: path.into(),
        cause,
    };
    let write_failed = |cause| FileError::Write {
        path: path.into(),
        cause,
    };
    let bytes = fs::read(path).map_err(open_failed)?;
    let mut log: Vec<CmdLogEntry> = if bytes.is_empty() {
        Vec::new()
    } else {
        serde_json::from_slice::<Option<Vec<CmdLogEntry>>>(&bytes)
            .map_err(|cause| FileError::CommandLog {
                path: path.into(),
                cause,
            })?
            .unwrap_or_default()
    };
    log.push(entry);
    let bytes = serde_json::to_vec(&log).map_err(|e| write_failed(e.into()))?;
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)
        .map_err(open_failed)?;
    file.write_all(&bytes).map_err(write_failed)
}

fn base64<S: serde::Serializer>(bytes: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    use base64::Engine;
    let engine = &base64::engine::general_purpose::STANDARD;
    if bytes.len() > IN_MEMORY_STDIN {
        // Streamed through the formatter: no second copy of a large stdin.
        s.collect_str(&base64::display::Base64Display::new(bytes, engine))
    } else {
        // At once, and as raw JSON: base64's alphabet needs no escaping, so
        // the serializer need not look at each character (encoding and
        // escaping through the formatter were a sixth of a noop ADD's
        // instructions).
        use serde::ser::Error;
        let mut quoted = String::with_capacity(bytes.len() / 3 * 4 + 6);
        quoted.push('"');
        engine.encode_string(bytes, &mut quoted);
        quoted.push('"');
        serde_json::value::RawValue::from_string(quoted)
            .map_err(S::Error::custom)?
            .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_case_insensitively() {
        let d = Debug::parse(br#"{"reportresult":"PASSTHROUGH","REPORTERRORCODE":7,"Unknown":1}"#)
            .unwrap();
        assert_eq!(d.report_result, "PASSTHROUGH");
        assert_eq!(d.report_error_code, 7);
    }

    #[test]
    fn written_back_in_the_reference_key_order_with_base64_stdin() {
        let d = Debug {
            command: "ADD".into(),
            cmd_args: CmdArgs {
                stdin_data: b"{\"a\":1}",
                ..CmdArgs::default()
            },
            ..Debug::default()
        };
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"ReportResult":"","ReportError":"","ReportErrorCode":0,"ReportStderr":"","ReportVersionSupport":null,"ExitWithCode":0,"Command":"ADD","CmdArgs":{"ContainerID":"","Netns":"","IfName":"","Args":"","Path":"","NetnsOverride":"","StdinData":"eyJhIjoxfQ=="}}"#
        );
    }

    #[test]
    fn base64_matches_go_for_every_padding() {
        let enc = |b: &[u8]| {
            let mut s = serde_json::Serializer::new(Vec::new());
            base64(&b, &mut s).unwrap();
            String::from_utf8(s.into_inner()).unwrap()
        };
        assert_eq!(enc(b""), r#""""#);
        assert_eq!(enc(b"f"), r#""Zg==""#);
        assert_eq!(enc(b"fo"), r#""Zm8=""#);
        assert_eq!(enc(b"foo"), r#""Zm9v""#);
        assert_eq!(enc(&[0xff, 0xfe, 0xfd, 0x00]), r#""//79AA==""#);
        // A large stdin is streamed: the same text.
        use base64::Engine;
        let large: Vec<u8> = (0..=255u8).cycle().take(IN_MEMORY_STDIN + 2).collect();
        let expected = base64::engine::general_purpose::STANDARD.encode(&large);
        assert_eq!(enc(&large), format!("\"{expected}\""));
    }

    #[test]
    fn wrong_types_are_errors_naming_the_key() {
        let e = Debug::parse(br#"{"ExitWithCode":"x"}"#).unwrap_err();
        assert_eq!(e.field, Some("ExitWithCode"));
        assert!(e.to_string().starts_with("ExitWithCode: "), "{e}");
        assert!(Debug::parse(br#"{"ReportErrorCode":-1}"#).is_err());
    }

    fn recorded(stdin: &[u8]) -> Debug<'_> {
        Debug {
            report_result: "PASSTHROUGH".into(),
            command: "ADD".into(),
            cmd_args: CmdArgs {
                stdin_data: stdin,
                ..CmdArgs::default()
            },
            ..Debug::default()
        }
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn rewriting_leaves_exactly_the_new_content_whether_it_grows_or_shrinks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("debug.json");
        fs::write(&path, br#"{"ReportResult":"PASSTHROUGH"}"#).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let big = vec![b'x'; 20_000];
        // Small -> large (beyond the blocks the file has), large -> small
        // (in place, padded then cut), and small -> a little larger.
        for stdin in [&big[..], b"{}", b"{\"a\":1}", &big[..100]] {
            let debug = recorded(stdin);
            debug.write(&path).unwrap();
            assert_eq!(
                fs::read(&path).unwrap(),
                serde_json::to_vec(&debug).unwrap()
            );
            assert_eq!(Debug::read(&path).unwrap().report_result, "PASSTHROUGH");
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640, "the file's mode is kept");
        }
        assert_eq!(
            names_in(dir.path()),
            ["debug.json"],
            "no temporary file left"
        );
    }
}
