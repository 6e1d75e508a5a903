//! The first stage of reading: the files of a directory, as `kubectl apply
//! -R` finds them (cli-runtime's `ExpandPathsToFileVisitors`, a
//! `filepath.Walk`): every file below it named `*.yaml`, `*.yml` or
//! `*.json`, sorted by name. A link is not followed as Go's walk does not
//! follow one: a link to a file is read under its own name (so a file and a
//! link to it are read both, as kubectl reads both), a link to a directory
//! is not walked, and a note says so. Hidden directories (`.github`) are
//! left out unless asked for, and named in a note when they hold manifest
//! files; `.git` is git's, and never read.

use std::path::{Path, PathBuf};

use super::claims;
use super::{Input, Learn, Note, Search, Unusable, file_source, whole};

/// The manifest files below `dir`, at any depth, in the walk's order.
pub(super) fn walk<F: Learn>(
    dir: &Path,
    search: Search,
    found: &mut dyn FnMut(Input<F>),
) -> Vec<PathBuf> {
    let mut left_out = Vec::new();
    let mut hidden = |entry: &walkdir::DirEntry| {
        let name = entry.file_name().to_string_lossy();
        let hidden = entry.depth() > 0 && entry.file_type().is_dir() && name.starts_with('.');
        if hidden && name != ".git" && !search.hidden {
            let files = manifest_files(entry.path());
            if files > 0 {
                left_out.push((entry.path().display().to_string(), files));
            }
        }
        hidden && (name == ".git" || !search.hidden)
    };
    let mut files = Vec::new();
    let entries = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| !hidden(entry));
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let at = e
                    .path()
                    .map_or_else(|| dir.display().to_string(), |p| p.display().to_string());
                found(Input::Unusable(whole(&at, format!("cannot read: {e}"))));
                continue;
            }
        };
        let path = entry.path();
        if entry.file_type().is_file() && is_manifest_file(path) {
            files.push(path.to_path_buf());
        } else if entry.file_type().is_symlink() {
            link(path, &mut files, found);
        }
    }
    if !left_out.is_empty() {
        let each: Vec<String> = left_out
            .iter()
            .map(|(dir, n)| format!("{dir} ({n} file{})", if *n == 1 { "" } else { "s" }))
            .collect();
        found(Input::Note(Note {
            source: file_source(&dir.display().to_string(), 1),
            text: format!(
                "hidden directories left out: {}; `kubectl apply -R` reads them, `--hidden` \
                 checks them too",
                each.join(", ")
            ),
            unrendered: false,
        }));
    }
    files
}

/// A link the walk met: a file read under the link's name where the name
/// is a manifest file's; a directory noted, when it holds manifest files.
fn link<F: Learn>(path: &Path, files: &mut Vec<PathBuf>, found: &mut dyn FnMut(Input<F>)) {
    match std::fs::metadata(path) {
        Ok(target) if target.is_dir() => {
            let files = manifest_files(path);
            if files > 0 {
                let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
                found(Input::Note(Note {
                    source: file_source(&path.display().to_string(), 1),
                    text: format!(
                        "a link to the directory {} ({files} manifest file{}), which `kubectl \
                         apply -R` does not follow: not checked; give the directory itself to \
                         check it",
                        target.display(),
                        if files == 1 { "" } else { "s" }
                    ),
                    unrendered: false,
                }));
            }
        }
        // kubectl opens it and says why it cannot.
        Err(e) if is_manifest_file(path) => found(Input::Unusable(Unusable {
            source: file_source(&path.display().to_string(), 1),
            reason: format!("cannot read: a link to nothing ({e})"),
        })),
        Ok(_) if is_manifest_file(path) => files.push(path.to_path_buf()),
        _ => {}
    }
}

/// Whether `path` is named as a manifest file is.
pub(super) fn is_manifest_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    ) || claims::is_kustomization(path)
}

/// How many manifest files `dir` holds, at any depth, links followed as
/// the walk follows them.
fn manifest_files(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| {
            (entry.file_type().is_file() || entry.file_type().is_symlink())
                && is_manifest_file(entry.path())
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links as Go's walk meets them: a file read under both names, in
    /// the walk's sorted order; a directory not walked, and noted; a link
    /// to nothing unusable.
    #[cfg(unix)]
    #[test]
    fn links_as_kubectl_walks_them() {
        use std::os::unix::fs::symlink;
        let root = std::env::temp_dir().join(format!("walk-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/pod.yaml"), "kind: Pod\n").unwrap();
        std::fs::write(root.join("real/notes.txt"), "not read").unwrap();
        symlink(root.join("real/pod.yaml"), root.join("a-link.yaml")).unwrap();
        symlink(root.join("real/notes.txt"), root.join("b-link.yaml")).unwrap();
        symlink(root.join("real"), root.join("c-dir")).unwrap();
        symlink(root.join("gone.yaml"), root.join("d-broken.yaml")).unwrap();
        symlink(root.join("real/pod.yaml"), root.join("e-link")).unwrap();
        let mut inputs = Vec::new();
        let files = walk(&root, Search::default(), &mut |input: Input| {
            inputs.push(input)
        });
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a-link.yaml", "b-link.yaml", "real/pod.yaml"]);
        let said: Vec<String> = inputs
            .iter()
            .map(|input| match input {
                Input::Note(note) => format!("note {}", note.text),
                Input::Unusable(unusable) => format!("unusable {}", unusable.reason),
                Input::Manifest(_) => "manifest".to_string(),
            })
            .collect();
        assert_eq!(said.len(), 2, "{said:#?}");
        assert!(
            said[0].starts_with("note a link to the directory ")
                && said[0].contains("(1 manifest file), which `kubectl apply -R` does not follow"),
            "{said:#?}"
        );
        assert!(
            said[1].starts_with("unusable cannot read: a link to nothing"),
            "{said:#?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
