//! What the `dhcp` plugin and its daemon say to each other: Go's
//! `net/rpc` over HTTP on the daemon's Unix socket, as the reference's two
//! halves do, so either half works with the other's reference.
//!
//! ```text
//! plugin -> daemon  CONNECT /_goRPC_ HTTP/1.0\n\n
//! daemon -> plugin  HTTP/1.0 200 Connected to Go RPC\n\n
//! plugin -> daemon  gob: rpc.Request{ServiceMethod: "DHCP.Allocate", Seq}, skel.CmdArgs
//! daemon -> plugin  gob: rpc.Response{ServiceMethod, Seq, Error}, types100.Result (or struct{})
//! ```
//!
//! The reference's daemon serves `DHCP.Allocate` (ADD and CHECK) and
//! `DHCP.Release` (DEL); ours also serves `DHCP.Check` (a lease is held),
//! `DHCP.GC` and `DHCP.Status`, and answers what it does not serve as Go
//! does (`rpc: can't find method DHCP.X`). An error is a string on the
//! wire, shown by the plugin as `error calling DHCP.Allocate: <error>`.
//!
//! Go: `net/rpc` (`server.go`, `client.go`), `rpcCall` (plugins
//! `plugins/ipam/dhcp/main.go`).

mod types;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::gob::{Decoder, Encoder, GobError, StructType, Value};
pub use types::{
    result_from_value, result_to_value, CmdArgs, ResultError, CMD_ARGS, EMPTY, REQUEST, RESPONSE,
    RESULT,
};

/// The path a `net/rpc` client asks for.
///
/// Go: `rpc.DefaultRPCPath`.
pub const RPC_PATH: &str = "/_goRPC_";

/// The status the server answers `CONNECT` with.
///
/// Go: `connected` (`net/rpc/server.go`).
pub const CONNECTED: &str = "200 Connected to Go RPC";

/// The longest HTTP head either side reads.
const MAX_HEAD: u64 = 4096;

/// How long the daemon waits for a plugin to send (its head, a call, the
/// rest of a call) before hanging up.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

/// How long the plugin waits for the daemon's answer: longer than any
/// acquisition (the daemon gives up first and says why).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(300);

/// Why a call got no answer, or an error for one.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Nothing answers on the socket (the daemon is not running), or not
    /// with `net/rpc`.
    #[error("error dialing DHCP daemon: dial-http unix {path}: {why}")]
    Dial {
        /// The daemon's socket.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// The daemon answered the call with an error.
    #[error("error calling {method}: {error}")]
    Remote {
        /// `DHCP.Allocate`, `DHCP.Release` ...
        method: String,
        /// The daemon's error, as it wrote it.
        error: String,
    },
    /// The exchange broke off or was not gob.
    #[error("error calling {method}: {source}")]
    Broken {
        /// The method called.
        method: String,
        /// What went wrong.
        #[source]
        source: GobError,
    },
}

impl CallError {
    /// Whether the daemon does not serve the method called (the
    /// reference's daemon has no `DHCP.Check`, `DHCP.GC`, `DHCP.Status`).
    pub fn is_unknown_method(&self) -> bool {
        matches!(self, CallError::Remote { error, .. } if error.starts_with("rpc: can't find"))
    }
}

/// Reads an HTTP head (up to a blank line), at most [`MAX_HEAD`] bytes;
/// returns its first line.
fn read_head(input: &mut impl BufRead) -> std::io::Result<String> {
    let mut limited = input.take(MAX_HEAD);
    let mut first = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if limited.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            return Ok(first);
        }
        if first.is_empty() {
            first = trimmed.to_string();
        }
    }
}

/// Calls `method` of the daemon at `path` with `args` and returns the
/// reply (its shape is the one its type definition on the stream says).
///
/// Go: `rpc.DialHTTP`, `Client.Call`.
pub fn call(path: &Path, method: &str, args: &CmdArgs) -> Result<Value, CallError> {
    let dial = |why: String| CallError::Dial {
        path: path.to_path_buf(),
        why,
    };
    let mut stream = UnixStream::connect(path).map_err(|e| dial(e.to_string()))?;
    stream
        .set_read_timeout(Some(ANSWER_DEADLINE))
        .map_err(|e| dial(e.to_string()))?;
    stream
        .write_all(format!("CONNECT {RPC_PATH} HTTP/1.0\n\n").as_bytes())
        .map_err(|e| dial(e.to_string()))?;
    let mut input = BufReader::new(stream.try_clone().map_err(|e| dial(e.to_string()))?);
    let status = read_head(&mut input).map_err(|e| dial(e.to_string()))?;
    match status.split_once(' ') {
        Some((version, rest)) if version.starts_with("HTTP/") && rest == CONNECTED => {}
        _ => return Err(dial(format!("unexpected HTTP response: {status:?}"))),
    }
    let broken = |source| CallError::Broken {
        method: method.to_string(),
        source,
    };
    let mut encoder = Encoder::new();
    let mut out = Vec::new();
    let header = Value::Struct(vec![
        ("ServiceMethod".into(), Value::String(method.to_string())),
        ("Seq".into(), Value::Uint(0)),
    ]);
    encoder
        .encode(&mut out, &REQUEST, &header)
        .map_err(broken)?;
    encoder
        .encode(&mut out, &CMD_ARGS, &args.to_value())
        .map_err(broken)?;
    stream.write_all(&out).map_err(|e| broken(e.into()))?;
    let mut decoder = Decoder::new();
    let response = decoder.decode(&mut input).map_err(broken)?;
    let body = decoder.decode(&mut input).map_err(broken)?;
    let error = response.text_field("Error");
    if !error.is_empty() {
        return Err(CallError::Remote {
            method: method.to_string(),
            error: error.to_string(),
        });
    }
    Ok(body)
}

/// What a handler answers a call with: a reply of a type, or an error
/// string.
pub type Answer = Result<(&'static StructType, Value), String>;

/// Serves one plugin's connection: the HTTP `CONNECT`, then calls until
/// the plugin hangs up, each answered by `handle(method, args, stream)`
/// (the stream, to notice a plugin that goes away). Every read has
/// `deadline` ([`READ_DEADLINE`] in the daemon).
///
/// Go: `Server.ServeHTTP`, `Server.ServeCodec`.
pub fn serve(
    stream: UnixStream,
    deadline: Duration,
    mut handle: impl FnMut(&str, CmdArgs, &UnixStream) -> Answer,
) -> Result<(), GobError> {
    stream.set_read_timeout(Some(deadline))?;
    let mut output = stream.try_clone()?;
    let mut input = BufReader::new(stream.try_clone()?);
    let request = read_head(&mut input)?;
    let mut words = request.split(' ');
    if words.next() != Some("CONNECT") || words.next() != Some(RPC_PATH) {
        // Go's answer to anything else.
        output.write_all(
            b"HTTP/1.0 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n405 must CONNECT\n",
        )?;
        return Ok(());
    }
    output.write_all(format!("HTTP/1.0 {CONNECTED}\n\n").as_bytes())?;
    let mut decoder = Decoder::new();
    let mut encoder = Encoder::new();
    loop {
        let header = match decoder.decode(&mut input) {
            Err(GobError::Eof) => return Ok(()),
            other => other?,
        };
        let body = decoder.decode(&mut input)?;
        let method = header.text_field("ServiceMethod").to_string();
        let seq = header.field("Seq").cloned().unwrap_or(Value::Uint(0));
        let answer = match method.split_once('.') {
            Some(("DHCP", _)) => handle(&method, CmdArgs::from_value(&body), &stream),
            Some(_) => Err(format!("rpc: can't find service {method}")),
            None => Err(format!("rpc: service/method request ill-formed: {method}")),
        };
        let (ty, reply, error) = match answer {
            Ok((ty, reply)) => (ty, reply, String::new()),
            Err(e) => (&EMPTY, Value::Struct(Vec::new()), e),
        };
        let response = Value::Struct(vec![
            ("ServiceMethod".into(), Value::String(method)),
            ("Seq".into(), seq),
            ("Error".into(), Value::String(error)),
        ]);
        let mut out = Vec::new();
        encoder.encode(&mut out, &RESPONSE, &response)?;
        encoder.encode(&mut out, ty, &reply)?;
        output.write_all(&out)?;
    }
}

#[cfg(test)]
mod tests;
