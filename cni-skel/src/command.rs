//! The CNI commands.

use std::fmt;
use std::str::FromStr;

/// A value of `CNI_COMMAND`.
///
/// The spec's six verbs, and [`Command::Other`] for any other value: a
/// runtime newer than the plugin, or a test sending a verb on purpose. The
/// skel answers an `Other` with code 4 ("unknown CNI_COMMAND") before any
/// plugin method runs, so a [`Request`](crate::Request) never carries one;
/// a runtime can still send one through `cni-invoke`.
///
/// ```
/// use cni_skel::Command;
/// assert_eq!("DEL".parse::<Command>(), Ok(Command::Del));
/// assert_eq!(Command::from_bytes(b"FROB"), Command::Other("FROB".into()));
/// assert_eq!(Command::Other("FROB".into()).as_str(), "FROB");
/// ```
///
/// Go: the `CNI_COMMAND` switch in `skel.pluginMain`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// A verb the spec does not define, as it was spelled (invalid UTF-8
    /// replaced by U+FFFD).
    Other(Box<str>),
}

impl Command {
    /// Every command the spec defines, in the order it introduces them.
    pub const ALL: [Command; 6] = [
        Command::Add,
        Command::Del,
        Command::Check,
        Command::Version,
        Command::Gc,
        Command::Status,
    ];

    /// Reads `CNI_COMMAND` (exact, upper case, as the reference); anything
    /// else is [`Command::Other`].
    pub fn from_bytes(s: &[u8]) -> Command {
        match s {
            b"ADD" => Command::Add,
            b"DEL" => Command::Del,
            b"CHECK" => Command::Check,
            b"GC" => Command::Gc,
            b"STATUS" => Command::Status,
            b"VERSION" => Command::Version,
            other => Command::Other(String::from_utf8_lossy(other).into()),
        }
    }

    /// The `CNI_COMMAND` spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Gc => "GC",
            Command::Status => "STATUS",
            Command::Version => "VERSION",
            Command::Other(verb) => verb,
        }
    }

    /// Whether this is one of the spec's verbs, not [`Command::Other`].
    pub fn is_known(&self) -> bool {
        !matches!(self, Command::Other(_))
    }
}

impl FromStr for Command {
    type Err = std::convert::Infallible;

    /// Never fails: an unknown verb is [`Command::Other`].
    fn from_str(s: &str) -> Result<Command, Self::Err> {
        Ok(Command::from_bytes(s.as_bytes()))
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_verb_reads_back_as_itself_and_others_keep_their_spelling() {
        for command in Command::ALL {
            assert_eq!(Command::from_bytes(command.as_str().as_bytes()), command);
            assert!(command.is_known());
        }
        let other = Command::from_bytes(b"add");
        assert_eq!(other, Command::Other("add".into()));
        assert_eq!(other.to_string(), "add");
        assert!(!other.is_known());
    }
}
