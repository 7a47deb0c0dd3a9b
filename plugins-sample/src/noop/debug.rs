//! The debug file through which tests drive the noop plugin, in the
//! reference's format (`plugins/test/noop/debug`): Go's JSON encoding of a
//! struct without tags, so keys are the field names, read
//! case-insensitively and written back in field order.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub fn read(path: &Path) -> Result<Debug<'static>, String> {
        let bytes = fs::read(path).map_err(|e| format!("open {}: {e}", path.display()))?;
        Self::parse(&bytes).map_err(|e| format!("debug file {}: {e}", path.display()))
    }

    /// Parses debug-file JSON with the reference decoder's key matching.
    pub fn parse(bytes: &[u8]) -> Result<Debug<'static>, String> {
        let [result, error, code, stderr, versions, exit] =
            cni_version::peek_fields(bytes, FIELDS).map_err(|e| e.to_string())?;
        fn field<T: serde::de::DeserializeOwned + Default>(
            name: &str,
            v: Option<Value>,
        ) -> Result<T, String> {
            v.map(|v| serde_json::from_value(v).map_err(|e| format!("{name}: {e}")))
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

    /// Writes the debug file back (mode 0600 when created), whole or not at
    /// all: into a temporary file beside it, renamed over it, so a full disk
    /// leaves the previous file intact. (The reference truncates it in
    /// place.) Where no file can be created beside it (a read-only
    /// directory), it is rewritten in place.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let write_to = |file: File| -> Result<(), String> {
            let mut out = BufWriter::new(file);
            serde_json::to_writer(&mut out, self)
                .map_err(|e| format!("write {}: {e}", path.display()))?;
            // Flushed, not fsynced: a test double's file needs to be whole
            // for the next reader, not durable across a crash (the rename
            // gives the former; fsync would double the cost of an ADD).
            out.into_inner()
                .map(drop)
                .map_err(|e| format!("write {}: {}", path.display(), e.error()))
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
                let written = write_to(file).and_then(|()| {
                    fs::rename(&tmp, path).map_err(|e| format!("rename {}: {e}", tmp.display()))
                });
                if written.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                written
            }
            Err(_) => write_to(
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| format!("open {}: {e}", path.display()))?,
            ),
        }
    }
}

/// Appends an entry to the command log, which must exist (as in the
/// reference); an empty file is an empty log.
pub fn append_command_log(path: &Path, entry: CmdLogEntry) -> Result<(), String> {
    let bytes = fs::read(path).map_err(|e| format!("open {}: {e}", path.display()))?;
    let mut log: Vec<CmdLogEntry> = if bytes.is_empty() {
        Vec::new()
    } else {
        serde_json::from_slice::<Option<Vec<CmdLogEntry>>>(&bytes)
            .map_err(|e| format!("command log {}: {e}", path.display()))?
            .unwrap_or_default()
    };
    log.push(entry);
    let bytes = serde_json::to_vec(&log).map_err(|e| e.to_string())?;
    write_file(path, &bytes, 0o644)
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| format!("write {}: {e}", path.display()))
}

fn base64<S: serde::Serializer>(bytes: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&base64::display::Base64Display::new(
        bytes,
        &base64::engine::general_purpose::STANDARD,
    ))
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
    }

    #[test]
    fn wrong_types_are_errors_naming_the_key() {
        let e = Debug::parse(br#"{"ExitWithCode":"x"}"#).unwrap_err();
        assert!(e.contains("ExitWithCode"), "{e}");
        assert!(Debug::parse(br#"{"ReportErrorCode":-1}"#).is_err());
    }
}
