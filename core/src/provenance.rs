//! Who could have written a key in the request at hand: its sender
//! (`userInfo.username`), the object it replaces, and the Pod's own spec;
//! in a request with no sender (an audit), what the object says of what
//! made it (`audit`). Each is read only when a key that names its writer is
//! not listed, and then once: nearly every request has no such key, and
//! pays nothing.

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::apparmor;
use crate::audit::{self, Stored};
use crate::controllers::Controller;
use crate::json::Reader;
use crate::kubernetes_keys::{Provenance, Writer};
use crate::request;

/// How a node, and kube-controller-manager, name themselves: the kubelet
/// as `system:node:<name>`, a controller as its service account in
/// `kube-system` (with `--use-service-account-credentials`, kubeadm's
/// default) or as the controller manager itself.
const NODE: &str = "system:node:";
pub const CONTROLLER_ACCOUNT: &str = "system:serviceaccount:kube-system:";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";

/// One object of a request, and what the request says of who wrote it.
/// Small and built on every request: what it reads is kept behind one
/// pointer, made the first time a key asks.
pub struct Request<'a> {
    /// The whole `validate` payload, read again for the sender's name and
    /// the object's text (`request::parts`) when a key needs them.
    payload: &'a [u8],
    /// The text of the object as it was before: an update's old object,
    /// whose keys were written already.
    earlier: Option<&'a [u8]>,
    /// The text of the object judged, `None` for the payload's
    /// `request.object`; and its kind.
    object: Option<&'a [u8]>,
    kind: Option<&'a str>,
    read: OnceCell<Box<Read<'a>>>,
}

/// What the request says, once read.
struct Read<'a> {
    /// `userInfo.username`, if it can be read.
    sender: Option<Cow<'a, str>>,
    object: &'a [u8],
    earlier_keys: Vec<Cow<'a, str>>,
    /// In a request with no sender, what the object says of what made it.
    stored: Option<Stored<'a>>,
}

impl<'a> Request<'a> {
    /// The object of the request in `payload`, of `kind`; `earlier` is the
    /// old object of an update. Nothing is read yet.
    pub fn new(payload: &'a [u8], earlier: Option<&'a [u8]>, kind: Option<&'a str>) -> Request<'a> {
        Request {
            payload,
            earlier,
            object: None,
            kind,
            read: OnceCell::new(),
        }
    }

    /// The old object of the same request, judged on its own: its keys were
    /// written before, so a key that names its writer counts where it did.
    pub fn for_old<'b>(&self, old: &'b [u8], kind: Option<&'b str>) -> Request<'b>
    where
        'a: 'b,
    {
        Request {
            object: Some(old),
            ..Request::new(self.payload, Some(old), kind)
        }
    }

    fn read(&self) -> &Read<'a> {
        self.read.get_or_init(|| {
            let parts = request::parts(self.payload).unwrap_or_default();
            let sender = parts.user_info.and_then(username);
            let object = self.object.or(parts.object).unwrap_or_default();
            Box::new(Read {
                stored: audit::no_sender(sender.as_deref()).then(|| Stored::read(object)),
                sender,
                object,
                earlier_keys: self
                    .earlier
                    .and_then(|text| request::decode_object(text).ok())
                    .map(|object| object.annotation_keys)
                    .unwrap_or_default(),
            })
        })
    }

    fn sender(&self) -> Option<&str> {
        self.read().sender.as_deref()
    }

    /// What an audited object says of what made it, if it is of one of
    /// `kinds`.
    fn stored(&self, kinds: &[&str]) -> Option<&Stored<'a>> {
        self.read()
            .stored
            .as_ref()
            .filter(|_| self.kind.is_some_and(|kind| kinds.contains(&kind)))
    }

    fn earlier_had(&self, key: &str) -> bool {
        self.read()
            .earlier_keys
            .iter()
            .any(|earlier| earlier == key)
    }
}

impl Provenance for Request<'_> {
    fn could_have_written(&self, writer: Writer, key: &str) -> bool {
        match writer {
            Writer::Anyone => true,
            Writer::Node => {
                self.sender().is_some_and(is_node)
                    || self.earlier_had(key)
                    || self.stored(&["Pod"]).is_some_and(Stored::made_by_its_node)
            }
            Writer::Controller(controller) => {
                self.sender()
                    .is_some_and(|sender| is_controller(sender, controller))
                    || self.earlier_had(key)
                    || self
                        .stored(controller.makes)
                        .is_some_and(|stored| stored.controlled_by(controller.owner))
            }
            Writer::AppArmorField => {
                self.kind == Some("Pod") && apparmor::restates_field(self.read().object, key)
            }
        }
    }
}

fn is_node(sender: &str) -> bool {
    sender
        .strip_prefix(NODE)
        .is_some_and(|name| !name.is_empty())
}

fn is_controller(sender: &str, controller: &Controller) -> bool {
    sender == CONTROLLER_MANAGER
        || sender.strip_prefix(CONTROLLER_ACCOUNT) == Some(controller.account)
}

/// The `username` of a `userInfo` text.
fn username(user_info: &[u8]) -> Option<Cow<'_, str>> {
    let r = &mut Reader::new(user_info);
    if r.peek() != Some(b'{') {
        return None;
    }
    let mut members = r.members();
    while let Some(key) = members.next(r).ok()? {
        if key.is("username") && r.peek() == Some(b'"') {
            return r.string().ok();
        }
        r.skip_value().ok()?;
    }
    None
}

/// The writers' rules read literally, over a sender's name, the keys an
/// earlier object had and, with no sender, what made the Pod, for Pods
/// that set no AppArmor field: for tests and fuzz targets to hold
/// `Request` to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    use std::collections::BTreeSet;

    use crate::kubernetes_keys::{Provenance, Writer};

    pub struct Sender {
        pub username: Option<String>,
        pub earlier: Option<BTreeSet<String>>,
        /// What the Pod's own fields say made it.
        pub made_by: Option<MadeBy>,
    }

    /// What made a Pod, as its owner references and node binding say.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum MadeBy {
        /// Bound to a node that is its controller owner.
        ItsNode,
        /// Controlled by an object of this API group and kind.
        Controller(&'static str, &'static str),
    }

    impl Sender {
        /// The same sender, for the old object `old` judged on its own.
        pub fn for_old(&self, old: &BTreeSet<String>) -> Sender {
            Sender {
                username: self.username.clone(),
                earlier: Some(old.clone()),
                made_by: self.made_by,
            }
        }
    }

    impl Provenance for Sender {
        fn could_have_written(&self, writer: Writer, key: &str) -> bool {
            let name = self.username.as_deref().unwrap_or("");
            let earlier = self.earlier.as_ref().is_some_and(|keys| keys.contains(key));
            // No sender: an audit, which asks the object what made it.
            let made_by = self.made_by.filter(|_| name.is_empty());
            match writer {
                Writer::Anyone => true,
                Writer::Node => {
                    name.len() > "system:node:".len() && name.starts_with("system:node:")
                        || earlier
                        || made_by == Some(MadeBy::ItsNode)
                }
                Writer::Controller(controller) => {
                    name == "system:kube-controller-manager"
                        || name
                            == format!("system:serviceaccount:kube-system:{}", controller.account)
                        || earlier
                        || made_by
                            == Some(MadeBy::Controller(
                                controller.owner.group,
                                controller.owner.kind,
                            ))
                }
                Writer::AppArmorField => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::JOB_CONTROLLER;

    const MIRROR: &str = "kubernetes.io/config.mirror";
    const INDEX: &str = "batch.kubernetes.io/job-completion-index";

    fn from(username: &str) -> String {
        format!(r#"{{"username":"{username}","groups":["system:authenticated"]}}"#)
    }

    fn wrote(user_info: &str, earlier: Option<&str>, writer: Writer, key: &str) -> bool {
        let payload = format!(r#"{{"request":{{"userInfo":{user_info},"object":{{}}}}}}"#);
        Request::new(payload.as_bytes(), earlier.map(str::as_bytes), Some("Pod"))
            .could_have_written(writer, key)
    }

    #[test]
    fn node_keys_come_from_a_node() {
        assert!(wrote(&from("system:node:cp-1"), None, Writer::Node, MIRROR));
        for sender in [
            "jane",
            "system:node:",
            "system:nodes",
            "system:serviceaccount:kube-system:node-controller",
            "system:kube-controller-manager",
        ] {
            assert!(
                !wrote(&from(sender), None, Writer::Node, MIRROR),
                "{sender}"
            );
        }
        assert!(!wrote("{}", None, Writer::Node, MIRROR));
        assert!(!wrote("null", None, Writer::Node, MIRROR));
        assert!(!wrote(r#"{"username":1}"#, None, Writer::Node, MIRROR));
        assert!(wrote(
            r#"{"username":"system:node:\u0063p"}"#,
            None,
            Writer::Node,
            MIRROR
        ));
    }

    #[test]
    fn controller_keys_come_from_that_controller() {
        let job = Writer::Controller(&JOB_CONTROLLER);
        for sender in [
            "system:serviceaccount:kube-system:job-controller",
            "system:kube-controller-manager",
        ] {
            assert!(wrote(&from(sender), None, job, INDEX), "{sender}");
        }
        for sender in [
            "system:serviceaccount:kube-system:cronjob-controller",
            "system:serviceaccount:default:job-controller",
            "system:node:cp-1",
            "jane",
        ] {
            assert!(!wrote(&from(sender), None, job, INDEX), "{sender}");
        }
    }

    /// An update keeps what the object had: an administrator's update of a
    /// mirror Pod, the job controller's of its Pods as another sender.
    #[test]
    fn an_update_keeps_the_keys_its_old_object_had() {
        let old =
            r#"{"kind":"Pod","metadata":{"annotations":{"kubernetes.io/config.mirror":"x"}}}"#;
        assert!(wrote(
            &from("kubernetes-admin"),
            Some(old),
            Writer::Node,
            MIRROR
        ));
        assert!(!wrote(
            &from("kubernetes-admin"),
            Some(old),
            Writer::Node,
            "kubernetes.io/config.hash"
        ));
        let job = Writer::Controller(&JOB_CONTROLLER);
        assert!(!wrote(&from("jane"), Some(old), job, INDEX));
        assert!(!wrote(&from("jane"), Some("{"), Writer::Node, MIRROR));
    }

    /// The Pod of an audit: the object as stored, with its owners and node.
    fn audited(user_info: Option<&str>, kind: &str, owner: &str, node: &str) -> Request<'static> {
        let object = format!(
            r#"{{"kind":"{kind}","metadata":{{"name":"p","ownerReferences":[{owner}]}},"spec":{{"nodeName":"{node}"}}}}"#
        );
        let user_info = user_info.map_or(String::new(), |info| format!(r#""userInfo":{info},"#));
        let payload = format!(
            r#"{{"request":{{"operation":"CREATE",{user_info}"object":{object},"oldObject":null}}}}"#
        );
        Request::new(
            Box::leak(payload.into_boxed_str()).as_bytes(),
            None,
            Some(Box::leak(kind.into())),
        )
    }

    const NODE_N1: &str =
        r#"{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u","controller":true}"#;
    const JOB_J: &str = r#"{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u","controller":true,"blockOwnerDeletion":true}"#;

    /// With no sender, the kubelet's keys count on a Pod bound to the node
    /// that controls it, the job controller's on a Pod a Job controls.
    #[test]
    fn an_audit_asks_the_object_what_made_it() {
        let job = Writer::Controller(&JOB_CONTROLLER);
        for user_info in [Some("{}"), None, Some(r#"{"username":""}"#)] {
            assert!(
                audited(user_info, "Pod", NODE_N1, "n1").could_have_written(Writer::Node, MIRROR)
            );
            assert!(audited(user_info, "Pod", JOB_J, "n1").could_have_written(job, INDEX));
            // Forged twins: bound elsewhere, or another writer's owner.
            assert!(
                !audited(user_info, "Pod", NODE_N1, "n2").could_have_written(Writer::Node, MIRROR)
            );
            assert!(
                !audited(user_info, "Pod", JOB_J, "n1").could_have_written(Writer::Node, MIRROR)
            );
            assert!(!audited(user_info, "Pod", NODE_N1, "n1").could_have_written(job, INDEX));
            let fake_job = JOB_J.replace("batch/v1", "example.com/v1");
            assert!(!audited(user_info, "Pod", &fake_job, "n1").could_have_written(job, INDEX));
            // The kubelet and the job controller write these keys on Pods only.
            assert!(
                !audited(user_info, "PodTemplate", NODE_N1, "n1")
                    .could_have_written(Writer::Node, MIRROR)
            );
            assert!(!audited(user_info, "Job", JOB_J, "n1").could_have_written(job, INDEX));
        }
    }

    /// A request that names its sender is judged by its sender alone, as
    /// admission always was: the object's owners do not speak for it.
    #[test]
    fn a_named_sender_is_judged_by_its_name_alone() {
        let job = Writer::Controller(&JOB_CONTROLLER);
        for sender in [
            "jane",
            "system:anonymous",
            "system:serviceaccount:kube-system:cronjob-controller",
        ] {
            let info = from(sender);
            assert!(
                !audited(Some(&info), "Pod", NODE_N1, "n1")
                    .could_have_written(Writer::Node, MIRROR)
            );
            assert!(!audited(Some(&info), "Pod", JOB_J, "n1").could_have_written(job, INDEX));
        }
        let kubelet = from("system:node:n9");
        assert!(audited(Some(&kubelet), "Pod", "", "").could_have_written(Writer::Node, MIRROR));
    }

    #[test]
    fn apparmor_keys_are_read_from_a_pods_spec_only() {
        let text = r#"{"kind":"Pod","metadata":{"annotations":{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}},"spec":{"containers":[{"name":"web","securityContext":{"appArmorProfile":{"type":"RuntimeDefault"}}}]}}"#;
        let key = "container.apparmor.security.beta.kubernetes.io/web";
        let payload = format!(r#"{{"request":{{"object":{text}}}}}"#);
        let pod = Request::new(payload.as_bytes(), None, Some("Pod"));
        assert!(pod.could_have_written(Writer::AppArmorField, key));
        let other = Request::new(payload.as_bytes(), None, Some("PodTemplate"));
        assert!(!other.could_have_written(Writer::AppArmorField, key));
        // The old object of an update is read as itself.
        let old = pod.for_old(text.as_bytes(), Some("Pod"));
        assert!(old.could_have_written(Writer::AppArmorField, key));
        let empty = Request::new(b"{}", None, Some("Pod")).for_old(b"{}", Some("Pod"));
        assert!(!empty.could_have_written(Writer::AppArmorField, key));
    }
}
