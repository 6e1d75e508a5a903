//! The Go modules that build the control plane of the cluster tests
//! (`cluster/go.mod`, `cluster/1.33/go.mod`): `k8s.io/kubernetes` at one
//! release, and each staging module it names replaced by the published
//! version of that same release, as a dependent of `k8s.io/kubernetes` must.

mod common;

use common::root;

/// `(module, version)` of each `require` line naming `k8s.io/kubernetes`,
/// and of each `replace` line.
fn read(go_mod: &str) -> (Option<String>, Vec<(String, String, String)>) {
    let mut kubernetes = None;
    let mut replaces = Vec::new();
    for line in go_mod.lines().map(str::trim) {
        let line = line.strip_prefix("require ").unwrap_or(line);
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["k8s.io/kubernetes", version, ..] => kubernetes = Some(version.to_string()),
            [from, "=>", to, version] => {
                replaces.push((from.to_string(), to.to_string(), version.to_string()))
            }
            _ => {}
        }
    }
    (kubernetes, replaces)
}

#[test]
fn each_release_replaces_its_staging_modules_with_their_published_versions() {
    for (dir, release) in [("cluster", "1.37"), ("cluster/1.33", "1.33")] {
        let text = std::fs::read_to_string(root().join(dir).join("go.mod")).expect(dir);
        let (kubernetes, replaces) = read(&text);
        let kubernetes = kubernetes.unwrap_or_else(|| panic!("{dir}: no k8s.io/kubernetes"));
        assert!(
            kubernetes.starts_with(&format!("v{release}.")),
            "{dir}: {kubernetes}"
        );
        let staging = kubernetes.replacen("v1.", "v0.", 1);
        assert!(replaces.len() >= 30, "{dir}: {} replaces", replaces.len());
        for (from, to, version) in &replaces {
            assert!(from.starts_with("k8s.io/"), "{dir}: {from}");
            assert_eq!(from, to, "{dir}");
            assert_eq!(version, &staging, "{dir}: {from}");
        }
        for module in [
            "k8s.io/api",
            "k8s.io/apiserver",
            "k8s.io/kubectl",
            "k8s.io/client-go",
        ] {
            assert!(
                replaces.iter().any(|(from, ..)| from == module),
                "{dir}: {module} is not replaced"
            );
        }
    }
}
