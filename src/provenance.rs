//! Who could have written a key in the request at hand: its sender
//! (`userInfo.username`), the object it replaces, and the Pod's own spec.
//! Each is read only when a key that names its writer is not listed, and
//! then once: nearly every request has no such key, and pays nothing.

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::apparmor;
use crate::bookkeeping::{Provenance, Writer};
use crate::json::Reader;
use crate::request;

/// How a node, and kube-controller-manager, name themselves: the kubelet
/// as `system:node:<name>`, a controller as its service account in
/// `kube-system` (with `--use-service-account-credentials`, kubeadm's
/// default) or as the controller manager itself.
const NODE: &str = "system:node:";
const CONTROLLER_ACCOUNT: &str = "system:serviceaccount:kube-system:";
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
            Box::new(Read {
                sender: parts.user_info.and_then(username),
                object: self.object.or(parts.object).unwrap_or_default(),
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
            Writer::Node => self.sender().is_some_and(is_node) || self.earlier_had(key),
            Writer::Controller(name) => {
                self.sender()
                    .is_some_and(|sender| is_controller(sender, name))
                    || self.earlier_had(key)
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

fn is_controller(sender: &str, name: &str) -> bool {
    sender == CONTROLLER_MANAGER || sender.strip_prefix(CONTROLLER_ACCOUNT) == Some(name)
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

/// The writers' rules read literally, over a sender's name and the keys
/// an earlier object had, for Pods that set no AppArmor field: for tests
/// and fuzz targets to hold `Request` to.
#[cfg(any(test, feature = "reference"))]
pub mod oracle {
    use std::collections::BTreeSet;

    use crate::bookkeeping::{Provenance, Writer};

    pub struct Sender {
        pub username: Option<String>,
        pub earlier: Option<BTreeSet<String>>,
    }

    impl Sender {
        /// The same sender, for the old object `old` judged on its own.
        pub fn for_old(&self, old: &BTreeSet<String>) -> Sender {
            Sender {
                username: self.username.clone(),
                earlier: Some(old.clone()),
            }
        }
    }

    impl Provenance for Sender {
        fn could_have_written(&self, writer: Writer, key: &str) -> bool {
            let name = self.username.as_deref().unwrap_or("");
            let earlier = self.earlier.as_ref().is_some_and(|keys| keys.contains(key));
            match writer {
                Writer::Anyone => true,
                Writer::Node => {
                    name.len() > "system:node:".len() && name.starts_with("system:node:") || earlier
                }
                Writer::Controller(controller) => {
                    name == "system:kube-controller-manager"
                        || name == format!("system:serviceaccount:kube-system:{controller}")
                        || earlier
                }
                Writer::AppArmorField => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let job = Writer::Controller("job-controller");
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
        let job = Writer::Controller("job-controller");
        assert!(!wrote(&from("jane"), Some(old), job, INDEX));
        assert!(!wrote(&from("jane"), Some("{"), Writer::Node, MIRROR));
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
