//! What the `dhcp` plugin and its daemon say to each other over the
//! daemon's Unix socket: one JSON line each way per connection.
//!
//! The reference's two halves speak Go's `net/rpc` (gob over HTTP), which
//! only Go reads; this protocol replaces both halves, so our plugin talks
//! to our daemon only. Version 1:
//!
//! ```text
//! plugin -> daemon  {"version":1,"command":"ADD","containerId":"..","netns":"/run/netns/x",
//!                    "ifname":"eth0","args":"K=V;..","config":{...the network configuration...}}
//! daemon -> plugin  {"result":{...a 1.0.0 result...}} | {"done":null} | {"error":{"code":..,"msg":..}}
//! ```
//!
//! Either side reads at most [`MAX_MESSAGE`] bytes; a call of another
//! version is answered with an error naming both versions.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use cni_types::{Code, Error};
use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const VERSION: u32 = 1;

/// The most either side reads of one message.
pub const MAX_MESSAGE: u64 = 1 << 20;

/// One command from the plugin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    /// [`VERSION`] of the sender.
    pub version: u32,
    /// `ADD`, `DEL`, `CHECK`, `GC` or `STATUS`.
    pub command: String,
    /// `CNI_CONTAINERID`.
    #[serde(rename = "containerId")]
    pub container_id: String,
    /// `CNI_NETNS`, made absolute by the plugin (the daemon may run in
    /// another directory); empty when unset.
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`, raw.
    pub args: String,
    /// The network configuration as the plugin received it.
    pub config: serde_json::Value,
}

/// The daemon's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// ADD's result, in version 1.0.0.
    Result(serde_json::Value),
    /// Success without a result.
    Done(()),
    /// The failure, as the plugin should report it.
    Error(Error),
}

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Nothing listens on the socket (the daemon is not running).
    #[error("cannot reach the DHCP daemon at {path}: {source}")]
    Connect {
        /// The daemon's socket.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The exchange broke off.
    #[error("the DHCP daemon at {path} did not answer: {source}")]
    Io {
        /// The daemon's socket.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The answer was not this protocol's.
    #[error("the DHCP daemon at {path} answered something unreadable: {source}")]
    Decode {
        /// The daemon's socket.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

impl From<CallError> for Error {
    /// An unreachable daemon is code 11 (try again later: the daemon may be
    /// starting, and nothing was changed); a broken exchange is 999.
    fn from(e: CallError) -> Error {
        match &e {
            CallError::Connect { .. } => {
                Error::try_again_later(e.to_string(), "start it with `dhcp daemon`")
            }
            _ => Error::new(Code::INTERNAL, e.to_string()),
        }
    }
}

/// One line of JSON, at most [`MAX_MESSAGE`] bytes.
fn read_line(stream: &UnixStream) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    BufReader::new(stream.take(MAX_MESSAGE)).read_until(b'\n', &mut line)?;
    Ok(line)
}

/// Sends `call` to the daemon at `path` and returns its answer.
pub fn call(path: &Path, call: &Call) -> Result<Answer, CallError> {
    let mut stream = UnixStream::connect(path).map_err(|source| CallError::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    let io = |source| CallError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut line = serde_json::to_vec(call).map_err(|e| io(e.into()))?;
    line.push(b'\n');
    stream.write_all(&line).map_err(io)?;
    let reply = read_line(&stream).map_err(io)?;
    serde_json::from_slice(&reply).map_err(|source| CallError::Decode {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads one call from `stream`, answers it with `handle`, and writes the
/// answer back. A call that cannot be read is answered with an error.
pub fn serve_one(
    mut stream: UnixStream,
    handle: impl FnOnce(Call) -> Answer,
) -> std::io::Result<()> {
    let line = read_line(&stream)?;
    let answer = match serde_json::from_slice::<Call>(&line) {
        Ok(call) if call.version == VERSION => handle(call),
        Ok(call) => Answer::Error(Error::new(
            Code::INCOMPATIBLE_CNI_VERSION,
            format!(
                "the DHCP daemon speaks protocol version {VERSION}, the plugin {}",
                call.version
            ),
        )),
        Err(e) => Answer::Error(Error::decoding("the plugin's call", e)),
    };
    let mut out = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
    out.push(b'\n');
    stream.write_all(&out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    fn ask(path: &Path, version: u32) -> Answer {
        let c = Call {
            version,
            command: "STATUS".into(),
            container_id: String::new(),
            netns: String::new(),
            ifname: String::new(),
            args: String::new(),
            config: serde_json::json!({}),
        };
        call(path, &c).unwrap()
    }

    #[test]
    fn a_call_of_another_protocol_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let (stream, _) = listener.accept().unwrap();
                serve_one(stream, |_| Answer::Done(())).unwrap();
            }
        });
        assert!(matches!(ask(&path, VERSION), Answer::Done(())));
        match ask(&path, 7) {
            Answer::Error(e) => assert!(e.msg.contains("version 1") && e.msg.contains('7'), "{e}"),
            other => panic!("{other:?}"),
        }
        server.join().unwrap();
    }

    #[test]
    fn an_endless_line_is_cut_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            read_line(&stream).unwrap().len()
        });
        let mut client = UnixStream::connect(&path).unwrap();
        // More than the bound, no newline; the reader stops at the bound.
        let chunk = vec![b'x'; 64 * 1024];
        let writer = std::thread::spawn(move || {
            for _ in 0..(MAX_MESSAGE as usize / chunk.len() + 2) {
                if client.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        assert_eq!(server.join().unwrap() as u64, MAX_MESSAGE);
        writer.join().unwrap();
    }
}
