//! The environment a plugin is called with, and which command needs what.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use cni_types::validate::{validate_container_id, validate_interface_name};
use cni_types::{Code, Error};

use crate::Command;

/// Where the dispatcher reads `CNI_*` variables from: the process
/// environment ([`ProcessEnv`]) or, in tests, any map.
///
/// Go: the `Getenv` field of skel's `dispatcher`.
pub trait Env {
    /// The value of `name`, if set. Values are bytes: the SDK never assumes
    /// the environment is UTF-8.
    fn var(&self, name: &str) -> Option<OsString>;
}

/// The real process environment, read with `var_os` (never panics on
/// non-UTF-8 values).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
}

impl<K: AsRef<str> + Ord, V: AsRef<OsStr>> Env for BTreeMap<K, V> {
    fn var(&self, name: &str) -> Option<OsString> {
        self.iter()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v.as_ref().to_owned())
    }
}

impl<K: AsRef<str> + Eq + std::hash::Hash, V: AsRef<OsStr>, S: std::hash::BuildHasher> Env
    for HashMap<K, V, S>
{
    fn var(&self, name: &str) -> Option<OsString> {
        self.iter()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v.as_ref().to_owned())
    }
}

impl<K: AsRef<str>, V: AsRef<OsStr>> Env for [(K, V)] {
    fn var(&self, name: &str) -> Option<OsString> {
        self.iter()
            .rev()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v.as_ref().to_owned())
    }
}

impl<E: Env + ?Sized> Env for &E {
    fn var(&self, name: &str) -> Option<OsString> {
        (**self).var(name)
    }
}

/// One `CNI_*` variable: which commands require it and how a present value
/// is validated (only when the command requires it, as in the reference).
struct EnvVar {
    name: &'static str,
    required_for: &'static [Command],
    validate: Option<Validator>,
}

type Validator = fn(&[u8]) -> Result<(), Error>;

use Command::{Add, Check, Del, Gc, Status};

/// The reference skel's table, in its order (the order decides which error
/// wins when several variables are wrong). One deliberate difference:
/// `CNI_PATH` is required only for GC, as the spec lists, where the
/// reference also demands it for ADD, DEL, CHECK and STATUS.
const ENV_VARS: [EnvVar; 7] = [
    EnvVar {
        name: "CNI_COMMAND",
        required_for: &[Add, Check, Del, Gc, Status],
        validate: None,
    },
    EnvVar {
        name: "CNI_CONTAINERID",
        required_for: &[Add, Check, Del],
        validate: Some(validate_container_id),
    },
    EnvVar {
        name: "CNI_NETNS",
        required_for: &[Add, Check],
        validate: None,
    },
    EnvVar {
        name: "CNI_IFNAME",
        required_for: &[Add, Check, Del],
        validate: Some(validate_interface_name),
    },
    EnvVar {
        name: "CNI_ARGS",
        required_for: &[],
        validate: None,
    },
    EnvVar {
        name: "CNI_PATH",
        required_for: &[Gc],
        validate: None,
    },
    EnvVar {
        name: "CNI_NETNS_OVERRIDE",
        required_for: &[],
        validate: None,
    },
];

/// The `CNI_*` variables of one invocation, as bytes (empty when unset:
/// "an empty value counts as missing").
#[derive(Debug, Clone, Default)]
pub(crate) struct CniEnv {
    pub command: Vec<u8>,
    pub container_id: Vec<u8>,
    pub netns: Vec<u8>,
    pub ifname: Vec<u8>,
    pub args: Vec<u8>,
    pub path: Vec<u8>,
    pub netns_override: Vec<u8>,
}

impl CniEnv {
    /// Reads and checks the variables. Every missing required variable is
    /// named in one error (code 4); a present, required container id or
    /// interface name that is invalid fails at once (code 4, naming it).
    pub(crate) fn read(env: &dyn Env) -> Result<CniEnv, Error> {
        let get = |name| {
            env.var(name)
                .map(|v| v.as_bytes().to_vec())
                .unwrap_or_default()
        };
        let mut out = CniEnv {
            command: get("CNI_COMMAND"),
            ..CniEnv::default()
        };
        let command = Command::from_bytes(&out.command);
        let mut missing = Vec::new();
        for var in &ENV_VARS {
            let value = get(var.name);
            let required = var.name == "CNI_COMMAND" || var.required_for.contains(&command);
            if value.is_empty() {
                if required {
                    missing.push(var.name);
                }
            } else if required {
                if let Some(validate) = var.validate {
                    validate(&value).map_err(|e| name_variable(e, var.name))?;
                }
            }
            *out.slot(var.name) = value;
        }
        if !missing.is_empty() {
            return Err(Error::new(
                Code::INVALID_ENVIRONMENT_VARIABLES,
                format!("required env variables [{}] missing", missing.join(",")),
            ));
        }
        Ok(out)
    }

    fn slot(&mut self, name: &str) -> &mut Vec<u8> {
        match name {
            "CNI_COMMAND" => &mut self.command,
            "CNI_CONTAINERID" => &mut self.container_id,
            "CNI_NETNS" => &mut self.netns,
            "CNI_IFNAME" => &mut self.ifname,
            "CNI_ARGS" => &mut self.args,
            "CNI_PATH" => &mut self.path,
            _ => &mut self.netns_override,
        }
    }
}

/// Prefixes the details with the variable's name, so the error says which
/// variable held the bad value.
fn name_variable(mut err: Error, var: &str) -> Error {
    err.details = if err.details.is_empty() {
        var.to_owned()
    } else {
        format!("{var}: {}", err.details)
    };
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<CniEnv, Error> {
        CniEnv::read(&vars)
    }

    #[test]
    fn every_missing_variable_is_named_in_one_error() {
        let e = read(&[("CNI_COMMAND", "ADD")]).unwrap_err();
        assert_eq!(e.code, Code::INVALID_ENVIRONMENT_VARIABLES);
        assert_eq!(
            e.msg,
            "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing"
        );
        let e = read(&[("CNI_COMMAND", "GC")]).unwrap_err();
        assert_eq!(e.msg, "required env variables [CNI_PATH] missing");
        let e = read(&[]).unwrap_err();
        assert_eq!(e.msg, "required env variables [CNI_COMMAND] missing");
    }

    #[test]
    fn empty_values_count_as_missing() {
        let e = read(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", ""),
            ("CNI_IFNAME", "eth0"),
        ])
        .unwrap_err();
        assert_eq!(e.msg, "required env variables [CNI_CONTAINERID] missing");
    }

    #[test]
    fn netns_is_optional_for_del_and_path_for_add() {
        assert!(read(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", "c"),
            ("CNI_IFNAME", "eth0")
        ])
        .is_ok());
        assert!(read(&[
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c"),
            ("CNI_NETNS", "/x"),
            ("CNI_IFNAME", "eth0")
        ])
        .is_ok());
        assert!(read(&[("CNI_COMMAND", "STATUS")]).is_ok());
        assert!(read(&[("CNI_COMMAND", "VERSION")]).is_ok());
    }

    #[test]
    fn invalid_values_fail_naming_the_variable_and_value() {
        let e = read(&[("CNI_COMMAND", "ADD"), ("CNI_CONTAINERID", "a b")]).unwrap_err();
        assert_eq!(
            (e.msg.as_str(), e.details.as_str()),
            ("invalid characters in containerID", "CNI_CONTAINERID: a b")
        );
        let e = read(&[("CNI_COMMAND", "DEL"), ("CNI_IFNAME", "a/b")]).unwrap_err();
        assert!(e.details.starts_with("CNI_IFNAME: "), "{e:?}");
        assert!(e.details.contains("a/b"), "{e:?}");
    }

    #[test]
    fn values_are_validated_only_when_the_command_requires_them() {
        assert!(read(&[
            ("CNI_COMMAND", "STATUS"),
            ("CNI_CONTAINERID", "a b"),
            ("CNI_IFNAME", "a/b")
        ])
        .is_ok());
    }
}
