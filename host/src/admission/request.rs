//! The AdmissionRequest the API server sends a validating webhook (a
//! `admission.k8s.io/v1` review's `request`), for `check` and `test`: an
//! object of the input comes from a user, and each object made from the
//! input from its controller's service account (`controllers::CONTROLLERS`), so
//! that keys only a controller writes count as Kubernetes' own there and
//! nowhere else.

use serde_json::{Value, json};

use policy_core::controllers::Controller;
use policy_core::provenance::CONTROLLER_ACCOUNT;

use policy_evaluator::kinds::Addressed;

/// Whoever applies the manifests when nobody is named. Any name but a
/// node's or a controller's is judged alike; the policy judges a request
/// that names no sender as an audit.
pub const USER: &str = "check";

/// The `userInfo` of a request: a controller's service account, or the
/// user who applies the manifests.
pub fn sender(made_by: Option<&Controller>) -> Value {
    match made_by {
        None => json!({"username": USER, "groups": ["system:authenticated"]}),
        Some(controller) => json!({
            "username": format!("{CONTROLLER_ACCOUNT}{}", controller.account),
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
        }),
    }
}

/// The request for `operation` (`CREATE`, `UPDATE` or `DELETE`) of
/// `object` (the new object; `None` for a DELETE) over `old` (the object
/// before; `None` for a CREATE), of the kind `addressed` names (the
/// caller's, who needed it to decide whether to send), sent by `user`.
pub fn request(
    operation: &str,
    addressed: &Addressed,
    object: Option<&Value>,
    old: Option<&Value>,
    user: Value,
) -> Value {
    let subject = object.or(old).unwrap_or(&Value::Null);
    let mut request = envelope(operation, addressed, subject, user);
    request["object"] = object.cloned().into();
    request["oldObject"] = old.cloned().into();
    request
}

/// The request around `subject` (the object, or the old one for a
/// DELETE), with `object` and `oldObject` left null for the caller to move
/// its objects in, uncopied.
pub fn envelope(operation: &str, addressed: &Addressed, subject: &Value, user: Value) -> Value {
    let Addressed {
        group,
        version,
        kind,
        resource,
    } = addressed;
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let options = match operation {
        "UPDATE" => "UpdateOptions",
        "DELETE" => "DeleteOptions",
        _ => "CreateOptions",
    };
    let mut request = json!({
        "uid": "00000000-0000-4000-8000-000000000000",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": subject["metadata"]["name"],
        "operation": operation,
        "userInfo": user,
        "object": null,
        "oldObject": null,
        "dryRun": false,
        "options": {"kind": options, "apiVersion": "meta.k8s.io/v1"},
    });
    if let Some(namespace) = subject["metadata"]["namespace"].as_str() {
        request["namespace"] = namespace.into();
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The objects sit where the API server puts them for each operation,
    /// and the request is named after the one there is.
    #[test]
    fn each_operation_carries_its_objects() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"}});
        let create = request(
            "CREATE",
            &Addressed::of(&pod),
            Some(&pod),
            None,
            sender(None),
        );
        assert_eq!(create["oldObject"], Value::Null);
        assert_eq!(create["resource"]["resource"], "pods");
        assert_eq!(create["userInfo"]["username"], USER);
        let delete = request(
            "DELETE",
            &Addressed::of(&pod),
            None,
            Some(&pod),
            sender(None),
        );
        assert_eq!(delete["object"], Value::Null);
        assert_eq!(
            (&delete["name"], &delete["namespace"]),
            (&json!("p"), &json!("shop"))
        );
        assert_eq!(delete["options"]["kind"], "DeleteOptions");
        let update = request(
            "UPDATE",
            &Addressed::of(&pod),
            Some(&pod),
            Some(&pod),
            sender(None),
        );
        assert_eq!(update["options"]["kind"], "UpdateOptions");
        assert_eq!(update["object"], update["oldObject"]);
    }
}
