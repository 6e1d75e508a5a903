//! A request that names no sender: an audit. Kubewarden's audit scanner
//! sends each object the cluster holds as a CREATE with an empty `userInfo`
//! and no old object (adm-controller,
//! `internal/audit-scanner/scanner/admission_request.go`), while the API
//! server names a sender in every admission request, `system:anonymous`
//! included. Nothing records who wrote a stored object's keys, so a key
//! whose writer matters counts where the object is one its writer makes,
//! as its own fields say:
//!
//! - the kubelet's keys, on a Pod bound to a node (`spec.nodeName`) that a
//!   Node of that name controls: the kubelet makes each mirror Pod so, the
//!   Node its controller owner (`pkg/kubelet/pod/mirror_client.go`,
//!   `CreateMirrorPod`; recorded in `test_data/cluster/recorded/*/pod-create-node.json`);
//! - a controller's keys, on an object that the kind it runs controls: the
//!   job controller's on a Pod whose controller owner is a `batch` Job (it
//!   makes each Pod with its Job as controller, `pkg/controller/job`;
//!   recorded in `pod-create-job-controller.json`).
//!
//! The object's fields are trusted: an audit cannot tell an owner reference
//! the kubelet wrote from one a user wrote before the policy was in place.

use std::borrow::Cow;

use crate::json::Reader;
use crate::json::visit::{elements, members, string};

/// Whether a request's `userInfo.username` names no sender.
pub fn no_sender(username: Option<&str>) -> bool {
    username.is_none_or(str::is_empty)
}

/// A kind of object, by its API group (`""` for the core group) and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub group: &'static str,
    pub kind: &'static str,
}

pub const NODE: Kind = Kind {
    group: "",
    kind: "Node",
};

/// What a stored object says of what made it: its controller owner (the
/// one `ownerReferences` entry with `controller: true`) and, for a Pod,
/// the node it is bound to. Text that cannot be read says nothing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stored<'a> {
    controller: Option<Owner<'a>>,
    node_name: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Owner<'a> {
    api_version: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
}

impl Owner<'_> {
    fn is(&self, kind: Kind) -> bool {
        // `apiVersion` is `group/version`, or `version` alone for the core
        // group.
        let group = self
            .api_version
            .as_deref()
            .map(|version| version.split_once('/').map_or("", |(group, _)| group));
        group == Some(kind.group) && self.kind.as_deref() == Some(kind.kind)
    }
}

impl<'a> Stored<'a> {
    pub fn read(object: &'a [u8]) -> Stored<'a> {
        let mut stored = Stored::default();
        let mut controllers = 0;
        let read = members(&mut Reader::new(object), &mut |r, field| match field {
            "metadata" => members(r, &mut |r, field| match field {
                "ownerReferences" => elements(r, &mut |r| {
                    let (mut owner, mut controller) = (Owner::default(), false);
                    members(r, &mut |r, field| {
                        match field {
                            "apiVersion" => owner.api_version = string(r)?,
                            "kind" => owner.kind = string(r)?,
                            "name" => owner.name = string(r)?,
                            "controller" => controller = r.boolean()? == Some(true),
                            _ => r.skip_value()?,
                        }
                        Ok(())
                    })?;
                    if controller {
                        controllers += 1;
                        stored.controller = Some(owner);
                    }
                    Ok(())
                }),
                _ => r.skip_value(),
            }),
            "spec" => members(r, &mut |r, field| match field {
                "nodeName" => string(r).map(|name| stored.node_name = name),
                _ => r.skip_value(),
            }),
            _ => r.skip_value(),
        });
        // The API server allows one controller owner: two say nothing.
        if read.is_err() || controllers > 1 {
            return Stored::default();
        }
        stored
    }

    /// A mirror Pod as the kubelet makes it: bound to the node that
    /// controls it.
    pub fn made_by_its_node(&self) -> bool {
        match (&self.controller, self.node_name.as_deref()) {
            (Some(owner), Some(node)) => {
                !node.is_empty() && owner.is(NODE) && owner.name.as_deref() == Some(node)
            }
            _ => false,
        }
    }

    /// Whether an object of `kind` controls this one.
    pub fn controlled_by(&self, kind: Kind) -> bool {
        self.controller.as_ref().is_some_and(|owner| owner.is(kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: Kind = Kind {
        group: "batch",
        kind: "Job",
    };

    fn pod(owners: &str, node: Option<&str>) -> String {
        let spec = node.map_or(String::new(), |n| {
            format!(r#","spec":{{"nodeName":"{n}"}}"#)
        });
        format!(r#"{{"kind":"Pod","metadata":{{"name":"p","ownerReferences":{owners}}}{spec}}}"#)
    }

    fn owner(api_version: &str, kind: &str, name: &str, controller: &str) -> String {
        format!(
            r#"{{"apiVersion":"{api_version}","kind":"{kind}","name":"{name}","uid":"u","controller":{controller}}}"#
        )
    }

    #[test]
    fn no_username_is_no_sender() {
        assert!(no_sender(None));
        assert!(no_sender(Some("")));
        assert!(!no_sender(Some("system:anonymous")));
        assert!(!no_sender(Some("system:node:n1")));
    }

    #[test]
    fn a_mirror_pod_is_bound_to_the_node_that_controls_it() {
        let node = |name, controller| format!("[{}]", owner("v1", "Node", name, controller));
        let made = |text: String| Stored::read(text.as_bytes()).made_by_its_node();
        assert!(made(pod(&node("n1", "true"), Some("n1"))));
        // Bound elsewhere, bound nowhere, or not controlled by the node.
        assert!(!made(pod(&node("n1", "true"), Some("n2"))));
        assert!(!made(pod(&node("n1", "true"), None)));
        assert!(!made(pod(&node("", "true"), Some(""))));
        assert!(!made(pod(&node("n1", "false"), Some("n1"))));
        assert!(!made(pod(
            &format!("[{}]", owner("v1", "Node", "n1", "null")),
            Some("n1")
        )));
        assert!(!made(pod("[]", Some("n1"))));
        // A Node of another group is no node.
        assert!(!made(pod(
            &format!("[{}]", owner("example.com/v1", "Node", "n1", "true")),
            Some("n1")
        )));
        // Two controller owners: the API server allows one; nothing counts.
        let two = format!(
            "[{},{}]",
            owner("v1", "Node", "n1", "true"),
            owner("batch/v1", "Job", "j", "true")
        );
        assert!(!made(pod(&two, Some("n1"))));
        // The controller among other owners counts.
        let among = format!(
            "[{},{}]",
            owner("apps/v1", "ReplicaSet", "r", "false"),
            owner("v1", "Node", "n1", "true")
        );
        assert!(made(pod(&among, Some("n1"))));
    }

    #[test]
    fn a_job_controls_its_pods_by_its_group_and_kind() {
        let controlled =
            |owners: &str| Stored::read(pod(owners, None).as_bytes()).controlled_by(JOB);
        for (api_version, kind, controller, controls) in [
            ("batch/v1", "Job", "true", true),
            ("batch/v1", "Job", "false", false),
            ("example.com/v1", "Job", "true", false),
            ("v1", "Job", "true", false),
            ("batch/v1", "CronJob", "true", false),
        ] {
            let owners = format!("[{}]", owner(api_version, kind, "j", controller));
            assert_eq!(controlled(&owners), controls, "{owners}");
        }
        assert!(!controlled("null"));
    }

    #[test]
    fn unreadable_text_says_nothing() {
        let text = pod(
            &format!("[{}]", owner("v1", "Node", "n1", "true")),
            Some("n1"),
        );
        assert!(Stored::read(text.as_bytes()).made_by_its_node());
        for cut in [1, 3, 10] {
            assert_eq!(
                Stored::read(&text.as_bytes()[..text.len() - cut]),
                Stored::default()
            );
        }
        assert_eq!(Stored::read(b"[]"), Stored::default());
        assert_eq!(Stored::read(b""), Stored::default());
        // Fields of the wrong type are no fields.
        let odd = r#"{"metadata":{"ownerReferences":{"a":1}},"spec":{"nodeName":7}}"#;
        assert_eq!(Stored::read(odd.as_bytes()), Stored::default());
    }
}
