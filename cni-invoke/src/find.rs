//! Finding a plugin binary on `CNI_PATH`.

use std::path::{Path, PathBuf};

use cni_types::{Code, Error};

/// The first regular file named `name` in `dirs`.
///
/// A name containing `/` or `\` is rejected (code 7 naming it): a plugin
/// type is a file name, never a path. No directories, or no match, is an
/// error naming the name and the directories searched.
///
/// Go: `invoke.FindInPath`.
pub fn find_in_path(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, Error> {
    if name.is_empty() {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "no plugin name provided",
        ));
    }
    if name.contains(['/', '\\']) {
        return Err(
            Error::new(Code::INVALID_NETWORK_CONFIG, "invalid plugin name").with_details(format!(
                "'{name}': a plugin type is a file name, not a path"
            )),
        );
    }
    if dirs.is_empty() {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "no plugin directories provided",
        )
        .with_details(format!("cannot look for {name:?}: CNI_PATH is empty")));
    }
    dirs.iter()
        .map(|dir| dir.join(name))
        .find(|p| is_regular(p))
        .ok_or_else(|| {
            Error::new(
                Code::INVALID_NETWORK_CONFIG,
                format!("failed to find plugin {name:?}"),
            )
            .with_details(format!("searched {}", join(dirs)))
        })
}

fn is_regular(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

fn join(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_match_wins_and_directories_are_skipped() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::create_dir(a.path().join("p")).unwrap(); // a directory named p
        std::fs::write(b.path().join("p"), "").unwrap();
        let c = tempfile::tempdir().unwrap();
        std::fs::write(c.path().join("p"), "").unwrap();
        let dirs = [a.path().into(), b.path().into(), c.path().into()];
        assert_eq!(find_in_path("p", &dirs).unwrap(), b.path().join("p"));
    }

    #[test]
    fn names_with_separators_are_rejected_with_code_7_naming_them() {
        for bad in ["../bin/x", "a/b", "a\\b", "/bin/sh"] {
            let e = find_in_path(bad, &["/usr/bin".into()]).unwrap_err();
            assert_eq!(e.code, Code::INVALID_NETWORK_CONFIG);
            assert!(e.details.contains(bad), "{e:?}");
        }
    }

    #[test]
    fn missing_plugins_name_the_plugin_and_the_path() {
        let e = find_in_path("nope", &["/nonexistent".into()]).unwrap_err();
        assert!(
            e.msg.contains("nope") && e.details.contains("/nonexistent"),
            "{e:?}"
        );
        assert_eq!(
            find_in_path("nope", &[]).unwrap_err().code,
            Code::INVALID_ENVIRONMENT_VARIABLES
        );
    }
}
