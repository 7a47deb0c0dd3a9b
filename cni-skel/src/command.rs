//! The CNI commands.

use std::fmt;

/// A value of `CNI_COMMAND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// "Add container to network, or apply modifications."
    Add,
    /// "Remove container from network, or un-apply modifications."
    Del,
    /// "Check container's networking is as expected." (0.4.0 and later)
    Check,
    /// "Clean up any stale resources." (1.1.0)
    Gc,
    /// "Check plugin status." (1.1.0)
    Status,
    /// "Probe plugin version support."
    Version,
}

impl Command {
    /// Every command, in the order the spec introduces them.
    pub const ALL: [Command; 6] = [
        Command::Add,
        Command::Del,
        Command::Check,
        Command::Version,
        Command::Gc,
        Command::Status,
    ];

    /// Reads `CNI_COMMAND` (exact, upper case, as the reference).
    pub fn from_bytes(s: &[u8]) -> Option<Command> {
        Some(match s {
            b"ADD" => Command::Add,
            b"DEL" => Command::Del,
            b"CHECK" => Command::Check,
            b"GC" => Command::Gc,
            b"STATUS" => Command::Status,
            b"VERSION" => Command::Version,
            _ => return None,
        })
    }

    /// The `CNI_COMMAND` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Gc => "GC",
            Command::Status => "STATUS",
            Command::Version => "VERSION",
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
