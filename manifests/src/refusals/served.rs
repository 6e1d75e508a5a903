//! What the API server of the pinned release serves in Kubernetes' own
//! groups: which kinds at which versions, and which versions it has
//! removed (and what replaces them). An object of a kind it does not serve
//! never reaches a policy: kubectl finds no resource for it, or the API
//! server refuses to decode it (`kind: pod`).
//!
//! The table is generated from Kubernetes' own types, never written by
//! hand: `cluster/decoder -kinds` lists the client-go scheme of the pinned
//! release, with each type's generated `APILifecycleRemoved` and
//! `APILifecycleReplacement`, and `tests/decoder.rs` holds this file to
//! what it prints. (k8s-openapi 0.29, the Rust types of Kubernetes, has
//! the kinds of 1.37 as that release's OpenAPI document lists them: a
//! removed version is simply absent there, with nothing to say which
//! version replaces it, and its thousands of types would be compiled into
//! the runner for a list of names.)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use policy_core::kinds::group_version;

const TABLE: &str = include_str!("kubernetes-kinds.tsv");

/// The table, read once.
struct Served {
    release: &'static str,
    /// Kinds by group, then version.
    kinds: BTreeMap<&'static str, BTreeMap<&'static str, BTreeSet<&'static str>>>,
    /// (apiVersion, kind) → (the release that removed it, what replaces it).
    removed: BTreeMap<(&'static str, &'static str), (&'static str, &'static str)>,
}

static SERVED: LazyLock<Served> = LazyLock::new(|| {
    let mut served = Served {
        release: "",
        kinds: BTreeMap::new(),
        removed: BTreeMap::new(),
    };
    for line in TABLE.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields[..] {
            ["release", release] => served.release = release,
            ["served", api_version, kind] => {
                let (group, version) = group_version(api_version);
                served
                    .kinds
                    .entry(group)
                    .or_default()
                    .entry(version)
                    .or_default()
                    .insert(kind);
            }
            ["removed", api_version, kind, release, replacement, _] => {
                served
                    .removed
                    .insert((api_version, kind), (release, replacement));
            }
            _ => panic!("kubernetes-kinds.tsv: a line of no known shape: {line:?}"),
        }
    }
    served
});

/// Kinds Kubernetes removed with their types, which the generated table
/// cannot name (the pinned release's scheme no longer has them): each
/// `apiVersion` it was last served at, the release that removed the kind,
/// and what replaces it, from Kubernetes' deprecated API migration guide.
const GONE: &[(&str, &str, &str, &str)] = &[
    ("policy/v1beta1", "PodSecurityPolicy", "1.25", PSP_INSTEAD),
    (
        "extensions/v1beta1",
        "PodSecurityPolicy",
        "1.25",
        PSP_INSTEAD,
    ),
];

const PSP_INSTEAD: &str = "Pod Security Admission replaces it (a Namespace's \
                           `pod-security.kubernetes.io/enforce` label), as do Kubewarden's \
                           `*-psp` policies, rule by rule";

/// The release the table is of (`1.37`).
#[cfg(test)]
fn release() -> &'static str {
    SERVED.release
}

/// Why the API server refuses an object of `kind` at `api_version`, if it
/// does: a version it no longer serves (with the one to use), a kind it
/// has not (spelt otherwise, or misspelt), a version it does not have. An
/// object of a group that is not Kubernetes' own (a custom resource) is
/// the business of its CRD: `None`.
pub fn refusal(api_version: &str, (group, version): (&str, &str), kind: &str) -> Option<String> {
    if let Some((_, _, removed, instead)) = GONE
        .iter()
        .find(|(version, gone, ..)| *version == api_version && *gone == kind)
    {
        return Some(format!(
            "`{api_version}` {kind} is no longer served: Kubernetes {removed} removed {kind} \
             altogether; {instead}"
        ));
    }
    let served = &*SERVED;
    let release = served.release;
    let no_versions = BTreeMap::new();
    // A group may serve nothing any more (`extensions`).
    let versions = match served.kinds.get(group) {
        Some(versions) => versions,
        None if served.removed.contains_key(&(api_version, kind)) => &no_versions,
        None => return None,
    };
    // The versions of the group that serve `kind`, to name instead.
    let serving = |kind: &str| -> Vec<String> {
        versions
            .iter()
            .filter(|(_, kinds)| kinds.contains(kind))
            .map(|(version, _)| format!("`{}`", api_version_of(group, version)))
            .collect()
    };
    if let Some((removed, replacement)) = served.removed.get(&(api_version, kind)) {
        // A replacement removed in its turn (flowcontrol's v1beta1, then
        // v1beta3) names what the release serves.
        let mut replacement = *replacement;
        while let Some((_, next)) = served.removed.get(&(replacement, kind)) {
            replacement = next;
        }
        let instead = match replacement.is_empty() {
            false => vec![format!("`{replacement}`")],
            true => serving(kind),
        };
        let instead = match instead.is_empty() {
            true => String::new(),
            false => format!("; use {}", instead.join(" or ")),
        };
        return Some(format!(
            "`{api_version}` {kind} is no longer served: Kubernetes {removed} removed it{instead}"
        ));
    }
    match versions.get(version) {
        Some(kinds) if kinds.contains(kind) => None,
        Some(kinds) => {
            let spelt = kinds.iter().find(|k| k.eq_ignore_ascii_case(kind));
            Some(match spelt {
                Some(spelt) => format!(
                    "no kind `{kind}` in `{api_version}`: kinds are spelt as Kubernetes spells \
                     them, `{spelt}`"
                ),
                None => format!(
                    "no kind `{kind}` in `{api_version}`, which Kubernetes {release} serves"
                ),
            })
        }
        None => {
            let instead = match serving(kind) {
                instead if !instead.is_empty() => {
                    format!("; it serves {kind} at {}", instead.join(" and "))
                }
                _ => String::new(),
            };
            Some(format!(
                "Kubernetes {release} serves no `{api_version}`{instead}"
            ))
        }
    }
}

fn api_version_of(group: &str, version: &str) -> String {
    match group {
        "" => version.to_string(),
        group => format!("{group}/{version}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal_of(api_version: &str, kind: &str) -> Option<String> {
        refusal(api_version, group_version(api_version), kind)
    }

    #[test]
    fn a_kind_removed_with_its_type_is_named_gone() {
        for api_version in ["policy/v1beta1", "extensions/v1beta1"] {
            let said = refusal_of(api_version, "PodSecurityPolicy").unwrap();
            assert!(
                said.starts_with(&format!(
                    "`{api_version}` PodSecurityPolicy is no longer served: Kubernetes 1.25 \
                     removed PodSecurityPolicy altogether; Pod Security Admission"
                )),
                "{said}"
            );
        }
        assert!(refusal_of("policy/v1", "PodSecurityPolicy").is_some());
    }

    #[test]
    fn what_the_release_serves_and_what_it_refuses() {
        assert_eq!(release(), "1.37");
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("apps/v1", "Deployment"),
            ("batch/v1", "CronJob"),
            ("networking.k8s.io/v1", "Ingress"),
        ] {
            assert_eq!(refusal_of(api_version, kind), None, "{api_version} {kind}");
        }
        // Custom resources, and Kubernetes' own CRDs, are their CRD's.
        assert_eq!(refusal_of("example.com/v1", "Widget"), None);
        assert_eq!(
            refusal_of("policies.kubewarden.io/v1", "ClusterAdmissionPolicy"),
            None
        );
        for (api_version, kind, refusal_text) in [
            (
                "apps/v1beta2",
                "Deployment",
                "`apps/v1beta2` Deployment is no longer served: Kubernetes 1.16 removed it; use `apps/v1`",
            ),
            (
                "extensions/v1beta1",
                "Ingress",
                "`extensions/v1beta1` Ingress is no longer served: Kubernetes 1.22 removed it; use `networking.k8s.io/v1`",
            ),
            (
                "v1",
                "pod",
                "no kind `pod` in `v1`: kinds are spelt as Kubernetes spells them, `Pod`",
            ),
            (
                "apps/v1",
                "Deploymnet",
                "no kind `Deploymnet` in `apps/v1`, which Kubernetes 1.37 serves",
            ),
            (
                "flowcontrol.apiserver.k8s.io/v1beta1",
                "FlowSchema",
                "`flowcontrol.apiserver.k8s.io/v1beta1` FlowSchema is no longer served: Kubernetes 1.26 removed it; use `flowcontrol.apiserver.k8s.io/v1`",
            ),
            (
                "apps/v2",
                "Deployment",
                "Kubernetes 1.37 serves no `apps/v2`; it serves Deployment at `apps/v1`",
            ),
        ] {
            assert_eq!(
                refusal_of(api_version, kind).as_deref(),
                Some(refusal_text),
                "{api_version} {kind}"
            );
        }
    }
}
