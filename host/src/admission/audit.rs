//! The AdmissionRequest that Kubewarden's audit scanner sends policy-server
//! (`/audit/<policy>`) for each object the cluster holds, built as its
//! source builds it (adm-controller 1.35,
//! `internal/audit-scanner/scanner/admission_request.go`,
//! `newAdmissionRequest`): a CREATE of the object as stored, named by its
//! own uid, kind and name, with an empty `userInfo` (the Go struct's zero
//! value) and `oldObject: null` (an empty `RawExtension`), no `dryRun`.
//! Its `resource.resource` is the Kind itself, not the plural the API
//! server would name.

use serde_json::{Value, json};

/// The scanner's request for `object`, a stored object as JSON.
pub fn request(object: &Value) -> Value {
    let mut request = envelope(object);
    request["object"] = object.clone();
    request
}

/// The scanner's request for `object`, with `object` left null for the
/// caller to move it in, uncopied.
pub fn envelope(object: &Value) -> Value {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = policy_core::kinds::group_version(api_version);
    let kind = object["kind"].as_str().unwrap_or_default();
    let metadata = &object["metadata"];
    let text = |field: &str| metadata[field].as_str().unwrap_or_default();
    let group_version_kind = json!({"group": group, "version": version, "kind": kind});
    let mut request = json!({
        "uid": text("uid"),
        "kind": group_version_kind,
        "resource": {"group": group, "version": version, "resource": kind},
        "requestKind": group_version_kind,
        "name": text("name"),
        "operation": "CREATE",
        "userInfo": {},
        "object": null,
        "oldObject": null,
    });
    // Go leaves out an empty namespace (`omitempty`): a cluster-wide object
    // has none.
    if !text("namespace").is_empty() {
        request["namespace"] = json!(text("namespace"));
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_object_and_no_sender() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1"},
            "spec": {"nodeName": "n1"},
        });
        let sent = request(&pod);
        assert_eq!(sent["uid"], "u-1");
        assert_eq!(
            sent["kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert_eq!(sent["requestKind"], sent["kind"]);
        assert_eq!(
            sent["resource"],
            json!({"group": "", "version": "v1", "resource": "Pod"})
        );
        assert_eq!(sent["namespace"], "shop");
        assert_eq!(sent["operation"], "CREATE");
        assert_eq!(sent["userInfo"], json!({}));
        assert_eq!(sent["oldObject"], Value::Null);
        assert_eq!(sent["object"], pod);
        assert!(sent.get("dryRun").is_none());

        let node =
            request(&json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
        assert!(node.get("namespace").is_none());
        let job =
            request(&json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}));
        assert_eq!(
            job["resource"],
            json!({"group": "batch", "version": "v1", "resource": "Job"})
        );
    }
}
