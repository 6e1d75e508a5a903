//! The AdmissionResponse a policy's answer becomes, as policy-server and
//! kwctl 1.35 build it (`admission_response.rs`,
//! `admission_response_handler.rs`): a changed object becomes the JSONPatch
//! from the request's object to it, base64-encoded; then the policy's mode
//! (monitor accepts everything), whether it may mutate at all, and its
//! custom rejection message apply.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::ValidationVerdict;

/// An AdmissionReview's `response`, field for field as kwctl prints it
/// (`kwctl run`'s one line) and policy-server sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    /// The JSONPatch (RFC 6902), base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    pub audit_annotations: Option<serde_json::Map<String, Value>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PatchType {
    JSONPatch,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Details {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
}

/// A cause as policy-evaluator serializes one: every field, `null` when
/// unset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cause {
    pub reason: Option<String>,
    pub message: Option<String>,
    pub field: Option<String>,
}

impl AdmissionResponse {
    /// A rejection, as policy-server makes one of an error.
    pub fn reject(uid: &str, message: String, code: u16) -> AdmissionResponse {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            patch_type: None,
            patch: None,
            status: Some(Status {
                message: Some(message),
                details: None,
                code: Some(code),
            }),
            audit_annotations: None,
            warnings: None,
        }
    }

    /// What policy-server answers when the policy cannot answer (a trap,
    /// an error, a malformed answer).
    pub fn internal_error(uid: &str, message: &str) -> AdmissionResponse {
        AdmissionResponse::reject(uid, format!("internal server error: {message}"), 500)
    }

    /// The response to a policy's answer; `object` is what the request
    /// asked to write (`request.object`, or a raw request whole), which a
    /// changed object is compared with.
    pub fn from_verdict(
        uid: &str,
        object: Option<&Value>,
        verdict: &ValidationVerdict,
    ) -> AdmissionResponse {
        let patch = match (&verdict.mutated_object, object) {
            // A patch the policy made itself (an `opa` policy's response).
            _ if verdict.patch.is_some() => verdict.patch.clone(),
            (Some(_), None) => {
                return AdmissionResponse {
                    status: Some(Status {
                        message: Some(MUTATING_A_DELETION.to_string()),
                        ..Status::default()
                    }),
                    ..AdmissionResponse::reject(uid, String::new(), 0)
                };
            }
            (Some(mutated), Some(object)) => patch(object, mutated),
            (None, _) => None,
        };
        let status = (verdict.message.is_some() || verdict.code.is_some()).then(|| Status {
            message: verdict.message.clone(),
            details: None,
            code: verdict.code,
        });
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: verdict.accepted,
            patch_type: patch.as_ref().map(|_| PatchType::JSONPatch),
            patch,
            status,
            audit_annotations: verdict.audit_annotations.clone(),
            warnings: verdict.warnings.clone(),
        }
    }

    /// The JSONPatch, decoded; `None` without one, `Err` when it is not
    /// base64 of a JSONPatch.
    pub fn operations(&self) -> Result<Option<json_patch::Patch>, String> {
        let Some(patch) = &self.patch else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .map_err(|e| format!("the patch is not base64: {e}"))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("the patch is not a JSONPatch: {e}"))
    }
}

const MUTATING_A_DELETION: &str = "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed";

/// The JSONPatch from `object` to `mutated`, base64-encoded; `None` when
/// they are the same.
pub fn patch(object: &Value, mutated: &Value) -> Option<String> {
    let diff = json_patch::diff(object, mutated);
    if diff.0.is_empty() {
        return None;
    }
    let text = serde_json::to_string(&diff).expect("a patch serializes");
    Some(base64::engine::general_purpose::STANDARD.encode(text))
}

/// What a verdict does to `object`, as the API server applies a webhook's
/// answer: the object it leaves and the JSONPatch (its operations, as
/// JSON) that makes it; `None` when it changes nothing. A waPC or WASI
/// policy answers with the changed object, an `opa` policy with the patch.
pub fn applied(
    object: &Value,
    verdict: &ValidationVerdict,
) -> Result<Option<(Value, Value)>, String> {
    let changed = match (&verdict.patch, &verdict.mutated_object) {
        (Some(patch), _) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(patch)
                .map_err(|e| format!("the policy's patch is not base64: {e}"))?;
            let operations: json_patch::Patch = serde_json::from_slice(&bytes)
                .map_err(|e| format!("the policy's patch is not a JSONPatch: {e}"))?;
            let mut changed = object.clone();
            json_patch::patch(&mut changed, &operations)
                .map_err(|e| format!("the policy's patch does not apply: {e}"))?;
            changed
        }
        (None, Some(mutated)) => mutated.clone(),
        (None, None) => return Ok(None),
    };
    let diff = json_patch::diff(object, &changed);
    if diff.0.is_empty() {
        return Ok(None);
    }
    let operations = serde_json::to_value(&diff).map_err(|e| e.to_string())?;
    Ok(Some((changed, operations)))
}

/// The JSONPatch (its operations, as JSON) from `from` to `to`: `[]` when
/// they are the same.
pub fn difference(from: &Value, to: &Value) -> Value {
    serde_json::to_value(json_patch::diff(from, to)).unwrap_or_default()
}

/// policy-server's refusal of a policy that mutated while its
/// `spec.mutating` is false.
pub fn not_allowed_to_mutate(policy: &str) -> String {
    format!(
        "Request rejected by policy {policy}. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
    )
}

/// A policy's `spec.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Protect,
    Monitor,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "protect" => Ok(Mode::Protect),
            "monitor" => Ok(Mode::Monitor),
            other => Err(format!(
                "unknown mode {other:?}: a policy's `spec.mode` is protect or monitor"
            )),
        }
    }
}

/// How policy-server treats a policy's response, from its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handling {
    /// The policy's id in messages: its name, or `group/member`.
    pub policy: String,
    pub mode: Mode,
    /// `spec.mutating`; `kwctl run` of a module lets it mutate.
    pub mutating: bool,
    /// `spec.message`: said instead of the policy's own rejection.
    pub message: Option<String>,
}

impl Handling {
    /// `kwctl run` of a module: protect mode, mutation allowed.
    pub fn run() -> Handling {
        Handling {
            policy: "policy-from-cli".to_string(),
            mode: Mode::Protect,
            mutating: true,
            message: None,
        }
    }

    /// In order: a monitor-mode policy accepts everything and changes
    /// nothing; a policy that may not mutate and did is refused; a
    /// custom message replaces a rejection's, which becomes its cause.
    pub fn apply(&self, response: AdmissionResponse) -> AdmissionResponse {
        let response = match self.mode {
            Mode::Monitor => AdmissionResponse {
                allowed: true,
                patch_type: None,
                patch: None,
                status: None,
                ..response
            },
            Mode::Protect if !self.mutating && response.patch.is_some() => AdmissionResponse {
                allowed: false,
                patch_type: None,
                patch: None,
                status: Some(Status {
                    message: Some(not_allowed_to_mutate(&self.policy)),
                    ..Status::default()
                }),
                ..response
            },
            Mode::Protect => response,
        };
        match (&self.message, response.allowed) {
            (Some(message), false) => {
                let status = response.status.unwrap_or_default();
                let mut details = status.details.unwrap_or_default();
                details.causes.push(Cause {
                    reason: None,
                    message: Some(status.message.unwrap_or_default()),
                    field: None,
                });
                AdmissionResponse {
                    status: Some(Status {
                        message: Some(message.clone()),
                        details: Some(details),
                        code: status.code,
                    }),
                    ..response
                }
            }
            _ => response,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(accepted: bool, mutated: Option<Value>) -> ValidationVerdict {
        ValidationVerdict {
            accepted,
            message: (!accepted).then(|| "no".to_string()),
            mutated_object: mutated,
            ..ValidationVerdict::accepted()
        }
    }

    #[test]
    fn a_changed_object_becomes_the_patch_kwctl_prints() {
        let object = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {}});
        let mutated =
            json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {}});
        let response =
            AdmissionResponse::from_verdict("u", Some(&object), &verdict(true, Some(mutated)));
        // The line kwctl prints, patch and all.
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy95IiwidmFsdWUiOiIyIn1d","auditAnnotations":null,"warnings":null}"#
        );
        let operations = serde_json::to_value(response.operations().unwrap().unwrap()).unwrap();
        assert_eq!(
            operations,
            json!([{"op": "add", "path": "/metadata/labels/y", "value": "2"}])
        );
        let unchanged = AdmissionResponse::from_verdict(
            "u",
            Some(&object),
            &verdict(true, Some(object.clone())),
        );
        assert_eq!((unchanged.patch, unchanged.patch_type), (None, None));
    }

    #[test]
    fn mutating_a_deletion_is_refused() {
        let response = AdmissionResponse::from_verdict("u", None, &verdict(true, Some(json!({}))));
        assert!(!response.allowed);
        assert_eq!(
            serde_json::to_value(&response.status).unwrap(),
            json!({"message": MUTATING_A_DELETION})
        );
    }

    #[test]
    fn a_policy_that_may_not_mutate_is_refused_and_monitor_accepts() {
        let object = json!({"a": 1});
        let mutating = AdmissionResponse::from_verdict(
            "u",
            Some(&object),
            &verdict(true, Some(json!({"a": 2}))),
        );
        let validating = Handling {
            policy: "pod-privileged".to_string(),
            mode: Mode::Protect,
            mutating: false,
            message: None,
        };
        let refused = validating.apply(mutating.clone());
        assert!(!refused.allowed && refused.patch.is_none() && refused.patch_type.is_none());
        assert_eq!(
            refused.status.unwrap().message.unwrap(),
            "Request rejected by policy pod-privileged. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
        );
        assert_eq!(Handling::run().apply(mutating.clone()), mutating);
        let monitor = Handling {
            mode: Mode::Monitor,
            ..validating.clone()
        };
        let rejected = AdmissionResponse::from_verdict("u", Some(&object), &verdict(false, None));
        let watched = monitor.apply(rejected.clone());
        assert!(watched.allowed && watched.status.is_none());
        let worded = Handling {
            message: Some("ask the platform team".to_string()),
            ..validating
        };
        let said = worded.apply(rejected);
        assert_eq!(
            serde_json::to_value(said.status).unwrap(),
            json!({"message": "ask the platform team", "details": {"causes": [{"reason": null, "message": "no", "field": null}]}})
        );
    }
}
