//! The live cluster of the user's kubeconfig, for the Kubernetes lookups of
//! `run --live-cluster`, as kwctl reaches it: the same reads policy-server
//! makes (discovery, lists, gets, a SubjectAccessReview), answered as
//! policy-server answers them.
//!
//! Asked through kubectl rather than a Rust client: kubectl reads every
//! kubeconfig its user has (contexts, client certificates, tokens, exec
//! and OIDC plugins) exactly as the rest of their tools do, and a Rust
//! client (kube-rs) would bring k8s-openapi's thousands of types into the
//! runner for four kinds of read. Nothing is written: `get --raw` reads,
//! and a SubjectAccessReview is answered without being stored.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

use super::cluster::{listed, pruned};
use super::{Host, Request, unanswered};
use policy_core::kinds;

/// A kind as the API server's discovery names it.
#[derive(Debug, Clone)]
struct Served {
    plural: String,
    namespaced: bool,
}

pub struct Kubectl {
    program: PathBuf,
    /// Discovery, by API version: each kind's resource.
    discovered: Mutex<BTreeMap<String, BTreeMap<String, Served>>>,
}

impl Kubectl {
    /// kubectl at `program`, `kubectl` on `PATH` by default; it finds its
    /// kubeconfig as it always does (`KUBECONFIG`, `~/.kube/config`).
    pub fn new(program: Option<PathBuf>) -> Kubectl {
        Kubectl {
            program: program.unwrap_or_else(|| PathBuf::from("kubectl")),
            discovered: Mutex::new(BTreeMap::new()),
        }
    }

    /// `kubectl get --raw PATH`: the body, or what kubectl said.
    fn raw(&self, path: &str) -> Result<Vec<u8>, Failure> {
        self.kubectl(&["get", "--raw", path], None)
    }

    fn kubectl(&self, arguments: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, Failure> {
        let mut child = Command::new(&self.program)
            .args(arguments)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::Other(format!("cannot run {}: {e}", self.program.display())))?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(input)
                .map_err(|e| Failure::Other(format!("cannot write to kubectl: {e}")))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|e| Failure::Other(format!("kubectl: {e}")))?;
        if output.status.success() {
            return Ok(output.stdout);
        }
        let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
        // kubectl names a 404 `(NotFound)`.
        Err(match said.contains("(NotFound)") {
            true => Failure::NotFound(said),
            false => Failure::Other(said),
        })
    }

    /// The kind's resource and scope, as discovery lists them.
    fn served(&self, api_version: &str, kind: &str) -> Result<Served, String> {
        let mut discovered = self.discovered.lock().unwrap_or_else(|p| p.into_inner());
        if !discovered.contains_key(api_version) {
            let body = self.raw(&base(api_version)).map_err(|e| {
                format!(
                    "error finding resource {api_version} / {kind}: {}",
                    e.text()
                )
            })?;
            let list: Value = serde_json::from_slice(&body)
                .map_err(|e| format!("discovery of {api_version} is no JSON: {e}"))?;
            let mut kinds = BTreeMap::new();
            for resource in list["resources"].as_array().into_iter().flatten() {
                let (Some(name), Some(kind)) =
                    (resource["name"].as_str(), resource["kind"].as_str())
                else {
                    continue;
                };
                // Subresources (`pods/status`) name their parent's kind.
                if name.contains('/') {
                    continue;
                }
                kinds.insert(
                    kind.to_string(),
                    Served {
                        plural: name.to_string(),
                        namespaced: resource["namespaced"].as_bool().unwrap_or(false),
                    },
                );
            }
            discovered.insert(api_version.to_string(), kinds);
        }
        discovered[api_version]
            .get(kind)
            .cloned()
            .ok_or_else(|| format!("Cannot find resource {api_version}/{kind}"))
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selectors: [(&str, &Option<String>); 2],
        field_masks: Option<&std::collections::BTreeSet<String>>,
    ) -> Result<Value, String> {
        let served = self.served(api_version, kind)?;
        if namespace.is_some() && !served.namespaced {
            return Err(format!(
                "resource {api_version}/{kind} is cluster wide. Cannot search for it inside of a namespace"
            ));
        }
        let mut path = base(api_version);
        if let Some(namespace) = namespace {
            path.push_str(&format!("/namespaces/{namespace}"));
        }
        path.push('/');
        path.push_str(&served.plural);
        let query: Vec<String> = selectors
            .iter()
            .filter_map(|(name, value)| {
                value.as_ref().map(|value| {
                    let encoded: String =
                        url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
                    format!("{name}={encoded}")
                })
            })
            .collect();
        if !query.is_empty() {
            path.push('?');
            path.push_str(&query.join("&"));
        }
        let body = self.raw(&path).map_err(|e| e.text())?;
        let list: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("the list of {api_version}/{kind} is no JSON: {e}"))?;
        // A list's items carry no kind: the reflector's, from a watch, do.
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let items = items.into_iter().map(move |mut item| {
            if let Some(item) = item.as_object_mut() {
                item.insert("apiVersion".into(), Value::from(api_version));
                item.insert("kind".into(), Value::from(kind));
            }
            item
        });
        Ok(listed(api_version, kind, items, field_masks))
    }
}

/// Why kubectl gave no body.
enum Failure {
    NotFound(String),
    Other(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::NotFound(text) | Failure::Other(text) => text.clone(),
        }
    }
}

/// The API path of a group version: `/api/v1`, `/apis/apps/v1`.
fn base(api_version: &str) -> String {
    match kinds::group_version(api_version) {
        ("", version) => format!("/api/{version}"),
        (group, version) => format!("/apis/{group}/{version}"),
    }
}

impl Host for Kubectl {
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
        let answer = match request {
            Request::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => self.list(
                api_version,
                kind,
                Some(namespace),
                [
                    ("labelSelector", label_selector),
                    ("fieldSelector", field_selector),
                ],
                field_masks.as_ref(),
            )?,
            Request::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => self.list(
                api_version,
                kind,
                None,
                [
                    ("labelSelector", label_selector),
                    ("fieldSelector", field_selector),
                ],
                field_masks.as_ref(),
            )?,
            Request::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                field_masks,
                ..
            } => {
                let served = self.served(api_version, kind)?;
                let mut path = base(api_version);
                match (served.namespaced, namespace) {
                    (true, Some(namespace)) => path.push_str(&format!("/namespaces/{namespace}")),
                    (true, None) => {
                        return Err(format!(
                            "Resource {api_version}/{kind} is namespaced, but no namespace was provided"
                        ));
                    }
                    (false, _) => {}
                }
                path.push_str(&format!("/{}/{name}", served.plural));
                let object = match self.raw(&path) {
                    Ok(body) => serde_json::from_slice(&body)
                        .map_err(|e| format!("{api_version}/{kind} {name} is no JSON: {e}"))?,
                    Err(Failure::NotFound(_)) => {
                        return Err(format!(
                            "Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'"
                        ));
                    }
                    Err(Failure::Other(said)) => return Err(said),
                };
                pruned(object, field_masks.as_ref())
            }
            Request::KubernetesGetResourcePluralName { api_version, kind } => {
                Value::String(self.served(api_version, kind)?.plural)
            }
            Request::KubernetesCanI { request, .. } => {
                let review = json!({
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {
                        "user": request.user,
                        "groups": request.groups,
                        "resourceAttributes": {
                            "namespace": request.resource_attributes.namespace,
                            "verb": request.resource_attributes.verb,
                            "group": request.resource_attributes.group,
                            "resource": request.resource_attributes.resource,
                            "subresource": request.resource_attributes.subresource,
                            "name": request.resource_attributes.name,
                            "version": request.resource_attributes.version,
                        },
                    },
                });
                let text = serde_json::to_vec(&review).expect("JSON values serialize");
                let body = self
                    .kubectl(&["create", "-f", "-", "-o", "json"], Some(&text))
                    .map_err(|e| e.text())?;
                let answered: Value = serde_json::from_slice(&body)
                    .map_err(|e| format!("the SubjectAccessReview's answer is no JSON: {e}"))?;
                answered
                    .get("status")
                    .cloned()
                    .ok_or("SubjectAccessReview did not return a response")?
            }
            _ => return Err(unanswered(request)),
        };
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_versions_have_their_api_paths() {
        assert_eq!(base("v1"), "/api/v1");
        assert_eq!(base("apps/v1"), "/apis/apps/v1");
        assert_eq!(
            base("gateway.networking.k8s.io/v1"),
            "/apis/gateway.networking.k8s.io/v1"
        );
    }

    #[test]
    fn a_missing_kubectl_is_an_error_that_names_it() {
        let kubectl = Kubectl::new(Some(PathBuf::from("/nonexistent/kubectl")));
        let error = kubectl
            .answer(&Request::KubernetesGetResourcePluralName {
                api_version: "v1".into(),
                kind: "Pod".into(),
            })
            .unwrap_err();
        assert!(error.contains("cannot run /nonexistent/kubectl"), "{error}");
    }
}
