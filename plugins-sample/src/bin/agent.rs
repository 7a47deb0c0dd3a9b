//! `agent SOCKET`: the local agent `agent-forward` talks to; see
//! `plugins_sample::agent::server`. Serves until killed.

use std::os::unix::net::UnixListener;

fn main() -> anyhow::Result<()> {
    use anyhow::Context;
    let socket = std::env::args_os().nth(1).context("usage: agent SOCKET")?;
    // A socket file left by a previous agent would make bind fail.
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)
        .with_context(|| format!("binding {}", socket.to_string_lossy()))?;
    plugins_sample::agent::server::Agent::default().serve(&listener)?;
    Ok(())
}
