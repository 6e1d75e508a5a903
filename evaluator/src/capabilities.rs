//! What a policy asks of its host, and who answers: the host calls of
//! every mode (waPC's host callback, WASI's `host.call`, a Rego policy's
//! inventory) go through [`dispatch`], which checks them as policy-server's
//! evaluator checks them (kubewarden-controller 1.35,
//! `policy-evaluator/src/runtimes/callback.rs`), then asks the [`Host`] of
//! the run: a kwctl session file (`session`), the objects a user gives
//! (`cluster`), the live cluster of the user's kubeconfig (`kubectl`), or
//! nothing, in which case each call fails naming the
//! capability and what would answer it. No call is ever answered with a
//! made-up success.

pub mod cluster;
pub mod kubectl;
pub mod rbac;
pub mod session;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metadata::Resource;

/// A host call as kwctl's session files record it: the variant names and
/// fields of policy-evaluator's `CallbackRequestType`, in its order, so
/// that a request this runner makes compares equal to one kwctl recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Request {
    OciManifestDigest {
        image: String,
    },
    OciManifest {
        image: String,
    },
    OciManifestAndConfig {
        image: String,
    },
    SigstorePubKeyVerify {
        image: String,
        pub_keys: Vec<String>,
        #[serde(default)]
        annotations: Value,
    },
    SigstoreKeylessVerify {
        image: String,
        keyless: Value,
        #[serde(default)]
        annotations: Value,
    },
    SigstoreKeylessPrefixVerify {
        image: String,
        keyless_prefix: Value,
        #[serde(default)]
        annotations: Value,
    },
    SigstoreGithubActionsVerify {
        image: String,
        owner: String,
        #[serde(default)]
        repo: Option<String>,
        #[serde(default)]
        annotations: Value,
    },
    SigstoreCertificateVerify {
        image: String,
        certificate: Value,
        #[serde(default)]
        certificate_chain: Value,
        require_rekor_bundle: bool,
        #[serde(default)]
        annotations: Value,
    },
    DNSLookupHost {
        host: String,
    },
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        #[serde(default)]
        label_selector: Option<String>,
        #[serde(default)]
        field_selector: Option<String>,
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        #[serde(default)]
        label_selector: Option<String>,
        #[serde(default)]
        field_selector: Option<String>,
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        #[serde(default)]
        namespace: Option<String>,
        #[serde(default)]
        disable_cache: bool,
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResourcePluralName {
        api_version: String,
        kind: String,
    },
    KubernetesCanI {
        request: AccessReview,
        #[serde(default)]
        disable_cache: bool,
    },
    CryptoIsCertificateTrusted {
        request: Value,
    },
}

/// A SubjectAccessReview as a policy asks it (the SDK's
/// `host_capabilities::kubernetes::SubjectAccessReview`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessReview {
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    pub resource_attributes: ResourceAttributes,
    pub user: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceAttributes {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub resource: String,
    #[serde(default)]
    pub subresource: Option<String>,
    pub verb: String,
    #[serde(default)]
    pub version: Option<String>,
}

impl Request {
    /// The capability's path, as `--allowed-host-capabilities` and the
    /// policy's metadata name it.
    pub fn capability(&self) -> &'static str {
        match self {
            Request::OciManifestDigest { .. } => "oci/v1/manifest_digest",
            Request::OciManifest { .. } => "oci/v1/oci_manifest",
            Request::OciManifestAndConfig { .. } => "oci/v1/oci_manifest_config",
            Request::SigstorePubKeyVerify { .. }
            | Request::SigstoreKeylessVerify { .. }
            | Request::SigstoreKeylessPrefixVerify { .. }
            | Request::SigstoreGithubActionsVerify { .. }
            | Request::SigstoreCertificateVerify { .. } => "oci/v2/verify",
            Request::DNSLookupHost { .. } => "net/v1/dns_lookup_host",
            Request::KubernetesListResourceNamespace { .. } => {
                "kubernetes/list_resources_by_namespace"
            }
            Request::KubernetesListResourceAll { .. } => "kubernetes/list_resources_all",
            Request::KubernetesGetResource { .. } => "kubernetes/get_resource",
            Request::KubernetesGetResourcePluralName { .. } => "kubernetes/plural_name",
            Request::KubernetesCanI { .. } => "kubernetes/can_i",
            Request::CryptoIsCertificateTrusted { .. } => "crypto/v1/is_certificate_trusted",
        }
    }

    /// The kind a Kubernetes lookup reads, which the policy must have been
    /// granted (`contextAwareResources`); `None` for other calls and for
    /// `can_i`, which policy-server does not limit so.
    pub fn resource(&self) -> Option<Resource> {
        match self {
            Request::KubernetesListResourceNamespace {
                api_version, kind, ..
            }
            | Request::KubernetesListResourceAll {
                api_version, kind, ..
            }
            | Request::KubernetesGetResource {
                api_version, kind, ..
            } => Some(Resource {
                api_version: api_version.clone(),
                kind: kind.clone(),
            }),
            _ => None,
        }
    }
}

/// Every capability a policy may call, by path: the tree
/// `--allowed-host-capabilities` patterns are checked against.
pub const CAPABILITIES: [&str; 11] = [
    "crypto/v1/is_certificate_trusted",
    "kubernetes/can_i",
    "kubernetes/get_resource",
    "kubernetes/list_resources_all",
    "kubernetes/list_resources_by_namespace",
    "net/v1/dns_lookup_host",
    "oci/v1/manifest_digest",
    "oci/v1/oci_manifest",
    "oci/v1/oci_manifest_config",
    "oci/v1/verify",
    "oci/v2/verify",
];

/// Which capabilities a policy may call (`--allowed-host-capabilities`,
/// `*` by default in kwctl): `*`, a path, or a path's prefix then `/*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    patterns: Vec<String>,
}

impl Default for Allowed {
    fn default() -> Allowed {
        Allowed {
            patterns: vec!["*".to_string()],
        }
    }
}

impl Allowed {
    /// Each pattern checked against the capabilities there are, as kwctl
    /// checks them: a segment no capability has, or a path that stops
    /// short of a capability, is an error that says what would do.
    pub fn new(patterns: &[String]) -> Result<Allowed, String> {
        for pattern in patterns {
            if pattern == "*" {
                continue;
            }
            let prefix = pattern.strip_suffix("/*");
            let known = match prefix {
                Some(prefix) => CAPABILITIES
                    .iter()
                    .any(|c| c.starts_with(prefix) && c[prefix.len()..].starts_with('/')),
                None => CAPABILITIES.contains(&pattern.as_str()),
            };
            if !known {
                let stops_short = prefix.is_none()
                    && CAPABILITIES.iter().any(|c| {
                        c.starts_with(pattern.as_str()) && c[pattern.len()..].starts_with('/')
                    });
                return Err(match stops_short {
                    true => format!(
                        "host capability pattern {pattern:?} names no capability: did you mean \"{pattern}/*\"?"
                    ),
                    false => format!(
                        "host capability pattern {pattern:?} names no capability: the capabilities are {}",
                        CAPABILITIES.join(", ")
                    ),
                });
            }
        }
        Ok(Allowed {
            patterns: patterns.to_vec(),
        })
    }

    pub fn allows(&self, capability: &str) -> bool {
        self.patterns.iter().any(|pattern| {
            pattern == "*"
                || pattern == capability
                || pattern.strip_suffix("/*").is_some_and(|prefix| {
                    capability.starts_with(prefix) && capability[prefix.len()..].starts_with('/')
                })
        })
    }
}

/// Answers the host calls of a run.
pub trait Host: Send + Sync {
    /// The answer's payload, as policy-server would send it; `Err` with
    /// why not, which the policy receives as its call's error.
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String>;
}

/// A host that answers nothing, saying what would.
#[derive(Debug, Default)]
pub struct Unanswered;

impl Host for Unanswered {
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
        Err(unanswered(request))
    }
}

/// Why a call got no answer here, and what would answer it.
pub fn unanswered(request: &Request) -> String {
    let capability = request.capability();
    match request {
        Request::KubernetesListResourceNamespace { .. }
        | Request::KubernetesListResourceAll { .. }
        | Request::KubernetesGetResource { .. }
        | Request::KubernetesGetResourcePluralName { .. }
        | Request::KubernetesCanI { .. } => format!(
            "policy-runner does not answer the host capability {capability} here: give the objects it reads (--cluster-objects, a `kubectl get -o yaml` dump or manifests) or a kwctl session file (--replay-host-capabilities-interactions)"
        ),
        _ => format!(
            "policy-runner does not answer the host capability {capability} (OCI registries, sigstore, DNS and certificates are never reached from here): give a kwctl session file that holds its answer (--replay-host-capabilities-interactions)"
        ),
    }
}

/// What a policy's host calls are checked against and answered by.
#[derive(Clone)]
pub struct Context {
    /// The policy's name in messages (`policy-from-cli` under `run`, as
    /// kwctl names it).
    pub policy: String,
    pub host: Arc<dyn Host>,
    /// The kinds it may read: its metadata's `contextAwareResources` where
    /// trusted, a ClusterAdmissionPolicy's own list, or none.
    pub resources: BTreeSet<Resource>,
    pub allowed: Allowed,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            policy: "policy-from-cli".to_string(),
            host: Arc::new(Unanswered),
            resources: BTreeSet::new(),
            allowed: Allowed::default(),
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("policy", &self.policy)
            .field("resources", &self.resources)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

/// Answers one host call of a guest, as policy-server's evaluator would:
/// the binding must be `kubewarden`; logging always works; any other call
/// must be allowed (`--allowed-host-capabilities`), a Kubernetes lookup
/// must read a kind the policy was granted, and then the host answers.
/// The messages are policy-server's, since a policy may show them.
pub fn dispatch(
    context: &Context,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    if binding != "kubewarden" {
        return Err(format!("unknown binding: {binding}"));
    }
    if namespace == "tracing" {
        return match operation {
            "log" => {
                if std::env::var_os("POLICY_HOST_LOG").is_some() {
                    eprintln!("guest log: {}", String::from_utf8_lossy(payload));
                }
                Ok(Vec::new())
            }
            _ => Err(format!("unknown operation: {operation}")),
        };
    }
    let path = format!("{namespace}/{operation}");
    if !context.allowed.allows(&path) {
        return Err(format!(
            "Policy has not been granted access to the '{path}' host capability. The violation has been reported."
        ));
    }
    let request = request(namespace, operation, payload)?;
    if let Some(resource) = request.resource()
        && !context.resources.contains(&resource)
    {
        return Err(format!(
            "Policy has not been granted access to Kubernetes {resource} resources. The violation has been reported."
        ));
    }
    context
        .host
        .answer(&request)
        .map_err(|e| format!("Callback evaluation failure: {e}"))
}

/// A request whose payload holds its variant's fields as they are.
fn tagged(variant: &str, payload: &[u8]) -> Result<Request, String> {
    let fields: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    serde_json::from_value(Value::Object(serde_json::Map::from_iter([(
        variant.to_string(),
        fields,
    )])))
    .map_err(|e| e.to_string())
}

/// The request a call's payload makes, read as policy-server reads it.
fn request(namespace: &str, operation: &str, payload: &[u8]) -> Result<Request, String> {
    let json = |e: serde_json::Error| e.to_string();
    let string = || serde_json::from_slice::<String>(payload).map_err(json);
    Ok(match (namespace, operation) {
        ("oci", "v1/verify") => {
            // Externally tagged, as the SDK's SigstoreVerificationInputV1.
            let value: Value = serde_json::from_slice(payload).map_err(json)?;
            match &value {
                Value::Object(map)
                    if map.len() == 1
                        && map.keys().all(|k| {
                            k == "SigstorePubKeyVerify" || k == "SigstoreKeylessVerify"
                        }) =>
                {
                    serde_json::from_value(value).map_err(json)?
                }
                _ => return Err("unknown variant for oci/v1/verify".to_string()),
            }
        }
        ("oci", "v2/verify") => {
            // Internally tagged (`type`), as SigstoreVerificationInputV2.
            let mut value: serde_json::Map<String, Value> =
                serde_json::from_slice(payload).map_err(json)?;
            let variant = match value.remove("type") {
                Some(Value::String(variant)) if variant.starts_with("Sigstore") => variant,
                _ => return Err("missing field `type`".to_string()),
            };
            let tagged = Value::Object(serde_json::Map::from_iter([(
                variant,
                Value::Object(value),
            )]));
            serde_json::from_value(tagged).map_err(json)?
        }
        ("oci", "v1/manifest_digest") => Request::OciManifestDigest { image: string()? },
        ("oci", "v1/oci_manifest") => Request::OciManifest { image: string()? },
        ("oci", "v1/oci_manifest_config") => Request::OciManifestAndConfig { image: string()? },
        ("net", "v1/dns_lookup_host") => Request::DNSLookupHost { host: string()? },
        ("crypto", "v1/is_certificate_trusted") => Request::CryptoIsCertificateTrusted {
            request: serde_json::from_slice(payload).map_err(json)?,
        },
        ("kubernetes", "can_i") => {
            #[derive(Deserialize)]
            struct CanI {
                subject_access_review: AccessReview,
                #[serde(default)]
                disable_cache: bool,
            }
            let asked: CanI = serde_json::from_slice(payload).map_err(json)?;
            Request::KubernetesCanI {
                request: asked.subject_access_review,
                disable_cache: asked.disable_cache,
            }
        }
        ("kubernetes", "list_resources_by_namespace") => {
            tagged("KubernetesListResourceNamespace", payload)?
        }
        ("kubernetes", "list_resources_all") => tagged("KubernetesListResourceAll", payload)?,
        ("kubernetes", "get_resource") => tagged("KubernetesGetResource", payload)?,
        ("oci" | "net" | "crypto" | "kubernetes", _) => {
            return Err(format!("unknown operation: {operation}"));
        }
        _ => return Err(format!("unknown namespace: {namespace}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers every call with its request's YAML, and keeps what it was
    /// asked.
    #[derive(Default)]
    struct Echo(Mutex<Vec<Request>>);

    impl Host for Echo {
        fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
            self.0.lock().unwrap().push(request.clone());
            Ok(b"answered".to_vec())
        }
    }

    fn context(resources: &[(&str, &str)], allowed: &[&str]) -> (Context, Arc<Echo>) {
        let echo = Arc::new(Echo::default());
        let context = Context {
            policy: "p".to_string(),
            host: echo.clone(),
            resources: resources
                .iter()
                .map(|(api_version, kind)| Resource {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                })
                .collect(),
            allowed: Allowed::new(&allowed.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap(),
        };
        (context, echo)
    }

    #[test]
    fn calls_are_checked_as_policy_server_checks_them() {
        let (granted, echo) = context(&[("v1", "Namespace")], &["*"]);
        let get = br#"{"api_version":"v1","kind":"Namespace","name":"a","disable_cache":false}"#;
        assert_eq!(
            dispatch(&granted, "kubewarden", "kubernetes", "get_resource", get),
            Ok(b"answered".to_vec())
        );
        assert_eq!(
            echo.0.lock().unwrap()[0],
            Request::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: "a".into(),
                namespace: None,
                disable_cache: false,
                field_masks: None,
            }
        );
        let secret = br#"{"api_version":"v1","kind":"Secret","name":"a","disable_cache":false}"#;
        assert_eq!(
            dispatch(&granted, "kubewarden", "kubernetes", "get_resource", secret),
            Err("Policy has not been granted access to Kubernetes v1/Secret resources. The violation has been reported.".to_string())
        );
        assert_eq!(
            dispatch(&granted, "other", "kubernetes", "get_resource", get),
            Err("unknown binding: other".to_string())
        );
        assert_eq!(
            dispatch(&granted, "kubewarden", "kubernetes", "delete", get),
            Err("unknown operation: delete".to_string())
        );
        assert_eq!(
            dispatch(&granted, "kubewarden", "ftp", "get", get),
            Err("unknown namespace: ftp".to_string())
        );
        let (oci_only, _) = context(&[("v1", "Namespace")], &["oci/*"]);
        assert_eq!(
            dispatch(&oci_only, "kubewarden", "kubernetes", "get_resource", get),
            Err("Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.".to_string())
        );
        assert_eq!(
            dispatch(&oci_only, "kubewarden", "tracing", "log", b"{}"),
            Ok(Vec::new())
        );
    }

    #[test]
    fn payloads_become_the_requests_kwctl_records() {
        let (any, echo) = context(&[], &["*"]);
        let calls: [(&str, &str, &str); 5] = [
            ("oci", "v1/oci_manifest_config", r#""ghcr.io/a/b:1""#),
            ("net", "v1/dns_lookup_host", r#""example.com""#),
            (
                "oci",
                "v2/verify",
                r#"{"type":"SigstorePubKeyVerify","image":"i","pub_keys":["k"],"annotations":null}"#,
            ),
            (
                "oci",
                "v1/verify",
                r#"{"SigstoreKeylessVerify":{"image":"i","keyless":[{"issuer":"x","subject":"y"}],"annotations":null}}"#,
            ),
            (
                "kubernetes",
                "can_i",
                r#"{"subject_access_review":{"groups":null,"resource_attributes":{"namespace":"n","resource":"pods","verb":"create"},"user":"u"},"disable_cache":true}"#,
            ),
        ];
        for (namespace, operation, payload) in calls {
            dispatch(&any, "kubewarden", namespace, operation, payload.as_bytes())
                .unwrap_or_else(|e| panic!("{namespace}/{operation}: {e}"));
        }
        let asked = echo.0.lock().unwrap();
        let capabilities: Vec<&str> = asked.iter().map(Request::capability).collect();
        assert_eq!(
            capabilities,
            [
                "oci/v1/oci_manifest_config",
                "net/v1/dns_lookup_host",
                "oci/v2/verify",
                "oci/v2/verify",
                "kubernetes/can_i"
            ]
        );
        // As kwctl writes a request into a session file: a tag, then the
        // fields in policy-evaluator's order.
        let recorded = yaml_serde::to_string(&asked[4]).unwrap();
        assert!(
            recorded.starts_with("!KubernetesCanI\nrequest:\n  groups: null\n"),
            "{recorded}"
        );
        assert!(
            dispatch(&any, "kubewarden", "oci", "v2/verify", br#"{"image":"i"}"#).is_err(),
            "a v2 verification names its type"
        );
    }

    #[test]
    fn patterns_are_checked_against_the_capabilities_there_are() {
        let allowed = |patterns: &[&str]| {
            Allowed::new(&patterns.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let some = allowed(&["oci/*", "net/v1/dns_lookup_host"]).unwrap();
        assert!(some.allows("oci/v2/verify") && some.allows("oci/v1/oci_manifest"));
        assert!(some.allows("net/v1/dns_lookup_host"));
        assert!(!some.allows("kubernetes/can_i"));
        assert!(!allowed(&[]).unwrap().allows("oci/v2/verify"));
        assert!(
            allowed(&["*"])
                .unwrap()
                .allows("crypto/v1/is_certificate_trusted")
        );
        let short = allowed(&["oci/v1"]).unwrap_err();
        assert!(short.contains("\"oci/v1/*\""), "{short}");
        let unknown = allowed(&["ftp/*"]).unwrap_err();
        assert!(unknown.contains("kubernetes/can_i"), "{unknown}");
        assert!(allowed(&["oc/*"]).is_err(), "a prefix is whole segments");
    }

    #[test]
    fn nothing_is_answered_without_a_host_and_the_error_says_what_would() {
        let context = Context {
            resources: [Resource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
            }]
            .into(),
            ..Context::default()
        };
        let get = br#"{"api_version":"v1","kind":"Namespace","name":"a","disable_cache":false}"#;
        let error =
            dispatch(&context, "kubewarden", "kubernetes", "get_resource", get).unwrap_err();
        assert!(
            error.starts_with("Callback evaluation failure: ")
                && error.contains("kubernetes/get_resource")
                && error.contains("--cluster-objects"),
            "{error}"
        );
        let error = dispatch(
            &context,
            "kubewarden",
            "oci",
            "v1/manifest_digest",
            br#""i""#,
        )
        .unwrap_err();
        assert!(
            error.contains("--replay-host-capabilities-interactions"),
            "{error}"
        );
    }
}
