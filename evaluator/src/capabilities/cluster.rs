//! The objects a user gives (manifests, or a `kubectl get -o yaml` dump of
//! a cluster), answering a policy's Kubernetes lookups offline as
//! policy-server answers them from the API server (kubewarden-controller
//! 1.35, `policy-evaluator/src/callback_handler/kubernetes`): the same
//! payloads and error texts, and the API server's own selector semantics
//! (`k8s.io/apimachinery` `labels` and `fields`), so that a context-aware
//! policy decides here as it would in the cluster.
//!
//! What cannot be known offline is settled so: a kind of which no object
//! was given is answered with an empty list, since the cluster may well
//! serve it; items come sorted by namespace then name, where policy-server
//! gives a hash map's order.
//!
//! The work is split by concern, under `capabilities::cluster`: this
//! module holds the index and its answers; `masks` prunes the objects a
//! policy gets to the fields it asks for; `labels` and `fields` parse
//! and match label and field selectors; `validation` checks label keys
//! and values and words errors as Go does, for the selectors and for RBAC.

mod fields;
mod labels;
mod masks;
mod validation;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::capabilities::{Host, Request, rbac, unanswered};
use policy_core::kinds;

use fields::FieldSelector;
use labels::LabelSelector;
use masks::Mask;
pub(crate) use validation::{aggregate, quote};

/// The objects of a cluster, by (API group, kind), then (namespace, name).
/// Each object is held once, in the index; versions of one group share a
/// kind's objects, as the API server serves one object at every version.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    index: BTreeMap<(String, String), BTreeMap<(String, String), Value>>,
    /// Whether a custom resource is namespaced, by (group, kind), as the
    /// CustomResourceDefinitions given declare it.
    scopes: BTreeMap<(String, String), bool>,
    skipped: usize,
}

/// (API group, kind): a kind's key in the index.
type KindKey = (String, String);
/// (namespace, name): an object's key among its kind's.
type ObjectKey = (String, String);
/// A kind's objects, by their keys.
type Objects = BTreeMap<ObjectKey, Value>;

thread_local! {
    /// The object whose creation is being judged on this thread: the API
    /// server has not stored it yet, so no lookup finds it
    /// (`Cluster::while_absent`).
    static ABSENT: std::cell::RefCell<Option<(KindKey, ObjectKey)>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether `key` names the object being created on this thread.
fn absent(kind: &KindKey, key: &ObjectKey) -> bool {
    ABSENT.with(|absent| {
        absent
            .borrow()
            .as_ref()
            .is_some_and(|(k, n)| k == kind && n == key)
    })
}

impl Cluster {
    /// Runs `judge` with `object` out of every lookup on this thread: a
    /// policy judging its creation runs before the API server stores it,
    /// so it must not find the object among those of its kind (a policy
    /// that wants a Service's selector unique would find the Service
    /// itself). The lookups run on the thread that calls the policy.
    pub fn while_absent<T>(object: &Value, judge: impl FnOnce() -> T) -> T {
        let kind = object["kind"].as_str().unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let (group, _) = kinds::group_version(api_version);
        let metadata = &object["metadata"];
        // As admitted: a namespaced object names its namespace, a
        // cluster-wide one none.
        let namespace = metadata["namespace"].as_str().unwrap_or_default();
        let name = metadata["name"].as_str().unwrap_or_default();
        let key = (
            (group.to_string(), kind.to_string()),
            (namespace.to_string(), name.to_string()),
        );
        let before = ABSENT.with(|absent| absent.replace(Some(key)));
        let judged = judge();
        ABSENT.with(|absent| *absent.borrow_mut() = before);
        judged
    }

    /// The cluster the objects make. A `…List` contributes its items (an
    /// item without a kind takes the list's, as the API server's typed lists
    /// leave it out); an object without a kind or a name is skipped, and
    /// counted. A namespaced object keeps the namespace it was given (the
    /// caller fills in defaults); a cluster-wide one is found by name alone,
    /// as the API server ignores a namespace on it. The same object given
    /// twice: the later replaces the earlier, as a second `apply` would.
    /// A custom resource is namespaced unless a CustomResourceDefinition
    /// given says otherwise (`scope: Cluster`).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Cluster {
        let mut flat = Vec::new();
        for object in objects {
            // A stack, not recursion: lists of lists cannot exhaust it.
            let mut pending = vec![object];
            while let Some(object) = pending.pop() {
                match list_items(object) {
                    Ok(items) => pending.extend(items.into_iter().rev()),
                    Err(object) => flat.push(object),
                }
            }
        }
        let mut cluster = Cluster::default();
        for object in &flat {
            if let Some((resource, namespaced)) = definition(object) {
                cluster.scopes.insert(resource, namespaced);
            }
        }
        for object in flat {
            cluster.insert(object);
        }
        cluster
    }

    fn insert(&mut self, object: Value) {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = metadata_str(&object, "name");
        if kind.is_empty() || name.is_empty() {
            self.skipped += 1;
            return;
        }
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (group, _) = kinds::group_version(api_version);
        let namespace = match self.namespaced(api_version, kind) {
            true => metadata_str(&object, "namespace"),
            false => "",
        };
        let kind_key = (group.to_string(), kind.to_string());
        let object_key = (namespace.to_string(), name.to_string());
        self.index
            .entry(kind_key)
            .or_default()
            .insert(object_key, object);
    }

    /// Whether objects of a kind live in a namespace: as a
    /// CustomResourceDefinition given declares it, else as `kinds` knows.
    pub fn namespaced(&self, api_version: &str, kind: &str) -> bool {
        let (group, _) = kinds::group_version(api_version);
        self.scopes
            .get(&(group.to_string(), kind.to_string()))
            .copied()
            .unwrap_or_else(|| kinds::namespaced(kind))
    }

    /// How many objects were given without a kind or a name.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// How many objects the cluster holds.
    pub fn len(&self) -> usize {
        self.index.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.index.values().all(BTreeMap::is_empty)
    }

    /// Every object, by group, kind, namespace and name.
    pub fn iter(&self) -> impl Iterator<Item = &Value> {
        self.index.values().flat_map(BTreeMap::values)
    }

    /// The objects of a kind in the group `api_version` names (at any of
    /// its versions), as given, sorted by namespace then name.
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<&Value> {
        let Some((at, objects)) = self.kind_entry(api_version, kind) else {
            return Vec::new();
        };
        objects
            .iter()
            .filter(|(key, _)| !absent(at, key))
            .map(|(_, object)| object)
            .collect()
    }

    /// The objects of a kind in one namespace, sorted by name.
    pub fn objects_in(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<&Value> {
        let Some((at, objects)) = self.kind_entry(api_version, kind) else {
            return Vec::new();
        };
        objects
            .range((namespace.to_string(), String::new())..)
            .take_while(|((ns, _), _)| ns == namespace)
            .filter(|(key, _)| !absent(at, key))
            .map(|(_, object)| object)
            .collect()
    }

    /// One object, as given: `namespace` is read for a namespaced kind
    /// only (`None` finds one given without a namespace).
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<&Value> {
        let namespace = match self.namespaced(api_version, kind) {
            true => namespace.unwrap_or(""),
            false => "",
        };
        let key = (namespace.to_string(), name.to_string());
        let (at, objects) = self.kind_entry(api_version, kind)?;
        match absent(at, &key) {
            true => None,
            false => objects.get(&key),
        }
    }

    /// A kind's objects, with the kind's key in the index.
    fn kind_entry(&self, api_version: &str, kind: &str) -> Option<(&KindKey, &Objects)> {
        let (group, _) = kinds::group_version(api_version);
        self.index
            .get_key_value(&(group.to_string(), kind.to_string()))
    }

    /// A list answer, as policy-server's reflector gives it.
    fn list(&self, list: List<'_>) -> Result<Value, String> {
        let labels = list
            .label_selector
            .map(|text| {
                LabelSelector::parse(text)
                    .map_err(|e| format!("label selector {}: {e}", quote(text)))
            })
            .transpose()?;
        let (group, version) = kinds::group_version(list.api_version);
        let fields = list
            .field_selector
            .map(|text| {
                FieldSelector::parse(text, group, version, list.kind)
                    .map_err(|e| format!("field selector {}: {e}", quote(text)))
            })
            .transpose()?;
        let candidates: Vec<&Value> = match list.namespace {
            Some(namespace) => self.objects_in(list.api_version, list.kind, namespace),
            None => self.objects(list.api_version, list.kind),
        };
        let items = candidates
            .into_iter()
            .filter(|object| labels.as_ref().is_none_or(|s| s.matches(object)))
            .filter(|object| fields.as_ref().is_none_or(|s| s.matches(object)))
            .cloned();
        Ok(listed(list.api_version, list.kind, items, list.field_masks))
    }

    /// A get answer: the object as the API server returns it, pruned.
    fn get_resource(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, String> {
        if self.namespaced(api_version, kind) && namespace.is_none() {
            return Err(format!(
                "Resource {api_version}/{kind} is namespaced, but no namespace was provided"
            ));
        }
        let mut object = self
            .get(api_version, kind, namespace, name)
            .ok_or_else(|| {
                format!(
                    "Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'"
                )
            })?
            .clone();
        if let Some(masks) = field_masks {
            Mask::new(masks).prune_object(&mut object);
        }
        Ok(object)
    }
}

/// What a list request asks.
struct List<'r> {
    api_version: &'r str,
    kind: &'r str,
    namespace: Option<&'r str>,
    label_selector: Option<&'r str>,
    field_selector: Option<&'r str>,
    field_masks: Option<&'r BTreeSet<String>>,
}

/// Answers the Kubernetes lookups from the objects given. A kind of which
/// no object was given lists empty and finds nothing: offline, a kind the
/// cluster does not serve cannot be told from one it serves none of.
impl Host for Cluster {
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
        let answer = match request {
            Request::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => {
                if !self.namespaced(api_version, kind) {
                    return Err(format!(
                        "resource {api_version}/{kind} is cluster wide. Cannot search for it inside of a namespace"
                    ));
                }
                self.list(List {
                    api_version,
                    kind,
                    namespace: Some(namespace),
                    label_selector: label_selector.as_deref(),
                    field_selector: field_selector.as_deref(),
                    field_masks: field_masks.as_ref(),
                })?
            }
            Request::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => self.list(List {
                api_version,
                kind,
                namespace: None,
                label_selector: label_selector.as_deref(),
                field_selector: field_selector.as_deref(),
                field_masks: field_masks.as_ref(),
            })?,
            // `disable_cache` asks for a fresh read: every read here is.
            Request::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                field_masks,
                ..
            } => self.get_resource(
                api_version,
                kind,
                name,
                namespace.as_deref(),
                field_masks.as_ref(),
            )?,
            Request::KubernetesGetResourcePluralName { kind, .. } => {
                Value::String(kinds::resource(kind))
            }
            Request::KubernetesCanI { request, .. } => {
                rbac::validate(request)?;
                rbac::review(self, request)
            }
            _ => return Err(unanswered(request)),
        };
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

fn metadata_str<'o>(object: &'o Value, field: &str) -> &'o str {
    object
        .get("metadata")
        .and_then(|metadata| metadata.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The kind a CustomResourceDefinition defines, and whether it is
/// namespaced.
fn definition(object: &Value) -> Option<((String, String), bool)> {
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    if kinds::group_version(api_version).0 != "apiextensions.k8s.io"
        || object.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
    {
        return None;
    }
    let spec = object.get("spec")?;
    let group = spec.get("group").and_then(Value::as_str)?;
    let kind = spec.get("names")?.get("kind").and_then(Value::as_str)?;
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    Some(((group.to_string(), kind.to_string()), namespaced))
}

/// The items of a `…List`, or the object itself when it is none.
fn list_items(object: Value) -> Result<Vec<Value>, Value> {
    let Value::Object(mut map) = object else {
        return Err(object);
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(item_kind) = kind.strip_suffix("List") else {
        return Err(Value::Object(map));
    };
    if !map.get("items").is_some_and(Value::is_array) {
        return Err(Value::Object(map));
    }
    let item_kind = item_kind.to_string();
    let api_version = map.get("apiVersion").cloned();
    let Some(Value::Array(mut items)) = map.remove("items") else {
        return Ok(Vec::new());
    };
    // `List` is kubectl's list of anything: its items name their kinds.
    if !item_kind.is_empty() {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            if !item.contains_key("kind") {
                item.insert("kind".into(), Value::String(item_kind.clone()));
                if let Some(api_version) = &api_version {
                    item.entry("apiVersion")
                        .or_insert_with(|| api_version.clone());
                }
            }
        }
    }
    Ok(items)
}

/// A list answer as policy-server's reflector gives it: its objects as the
/// reflector keeps them, pruned by the masks, under the requested version.
pub(super) fn listed(
    api_version: &str,
    kind: &str,
    objects: impl Iterator<Item = Value>,
    field_masks: Option<&BTreeSet<String>>,
) -> Value {
    let mask = field_masks.map(Mask::new);
    let items = objects
        .map(|mut item| {
            as_reflected(&mut item);
            if let Some(mask) = &mask {
                mask.prune_object(&mut item);
            }
            item
        })
        .collect();
    let mut answer = Map::new();
    answer.insert("apiVersion".into(), Value::String(api_version.into()));
    answer.insert("kind".into(), Value::String(format!("{kind}List")));
    answer.insert("metadata".into(), Value::Object(Map::new()));
    answer.insert("items".into(), Value::Array(items));
    Value::Object(answer)
}

/// The object a get answers, pruned by the masks.
pub(super) fn pruned(mut object: Value, field_masks: Option<&BTreeSet<String>>) -> Value {
    if let Some(masks) = field_masks {
        Mask::new(masks).prune_object(&mut object);
    }
    object
}

/// What policy-server's reflector does to every object it lists, to save
/// memory: `managedFields` emptied, kubectl's last-applied configuration
/// dropped (and, written back from kube-rs' typed metadata, both fields
/// then present).
fn as_reflected(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    metadata.insert("managedFields".into(), Value::Array(Vec::new()));
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    match annotations {
        Value::Object(annotations) => {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
        other => *other = Value::Object(Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(super) fn pod(namespace: &str, name: &str, labels: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        })
    }

    pub(super) fn answer(cluster: &Cluster, request: Request) -> Result<Value, String> {
        cluster
            .answer(&request)
            .map(|bytes| serde_json::from_slice(&bytes).expect("the answer is JSON"))
    }

    pub(super) fn list_all(
        cluster: &Cluster,
        kind: &str,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let (api_version, kind) = kind.rsplit_once('/').map_or(("v1", kind), |(a, k)| (a, k));
        let list = answer(
            cluster,
            Request::KubernetesListResourceAll {
                api_version: api_version.into(),
                kind: kind.into(),
                label_selector: labels.map(str::to_string),
                field_selector: fields.map(str::to_string),
                field_masks: None,
            },
        )?;
        Ok(list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| {
                let metadata = &item["metadata"];
                match metadata["namespace"].as_str() {
                    Some(namespace) => {
                        format!("{namespace}/{}", metadata["name"].as_str().unwrap_or(""))
                    }
                    None => metadata["name"].as_str().unwrap_or("").to_string(),
                }
            })
            .collect())
    }

    #[test]
    fn objects_are_indexed_by_group_and_kind_and_sorted() {
        let cluster = Cluster::new([
            pod("b", "x", json!({})),
            pod("a", "y", json!({})),
            pod("a", "x", json!({})),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": "ignored"}}),
        ]);
        let names: Vec<String> = cluster
            .objects("v1", "Pod")
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["metadata"]["namespace"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(names, ["a/x", "a/y", "b/x"]);
        assert_eq!(cluster.objects("apps/v1", "Deployment").len(), 1);
        assert_eq!(
            cluster.objects("apps/v1beta1", "Deployment").len(),
            1,
            "any version of the group"
        );
        assert!(
            cluster.objects("v1", "Deployment").is_empty(),
            "not the core group"
        );
        assert!(
            cluster
                .objects("extensions/v1beta1", "Deployment")
                .is_empty()
        );
        assert_eq!(cluster.objects_in("v1", "Pod", "a").len(), 2);
        assert!(
            cluster.get("v1", "Namespace", None, "a").is_some(),
            "a cluster-wide kind is found by name"
        );
        assert!(cluster.get("v1", "Namespace", Some("x"), "a").is_some());
        assert!(cluster.get("v1", "Pod", Some("b"), "x").is_some());
        assert!(cluster.get("v1", "Pod", None, "x").is_none());
        assert_eq!(cluster.len(), 5);
        assert_eq!(cluster.iter().count(), 5);
    }

    #[test]
    fn lists_are_flattened_and_the_nameless_skipped() {
        let cluster = Cluster::new([
            json!({"apiVersion": "v1", "kind": "List", "items": [
                pod("a", "p", json!({})),
                {"apiVersion": "v1", "kind": "PodList", "items": [
                    {"metadata": {"name": "typed", "namespace": "a"}},
                ]},
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "x-"}},
                {"kind": "Pod"},
                "not an object",
            ]}),
            json!({"apiVersion": "v1", "metadata": {"name": "kindless"}}),
            json!(null),
            json!({"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": {"name": "a-kind-named-so"}}),
        ]);
        assert_eq!(cluster.skipped(), 5);
        assert_eq!(cluster.objects("v1", "Pod").len(), 2);
        let typed = cluster
            .get("v1", "Pod", Some("a"), "typed")
            .expect("a typed list's item");
        assert_eq!(typed["kind"], "Pod");
        assert_eq!(typed["apiVersion"], "v1");
        assert_eq!(
            cluster.objects("example.com/v1", "WidgetList").len(),
            1,
            "no items: an object"
        );
    }

    #[test]
    fn custom_resources_are_scoped_as_their_definitions_say() {
        let definition = |kind: &str, scope: &str| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": format!("{}s.example.com", kind.to_lowercase())},
                   "spec": {"group": "example.com", "names": {"kind": kind}, "scope": scope}})
        };
        let widget = |kind: &str, namespace: Option<&str>| {
            let mut object =
                json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "w"}});
            if let Some(namespace) = namespace {
                object["metadata"]["namespace"] = json!(namespace);
            }
            object
        };
        // The definitions may come after the resources.
        let cluster = Cluster::new([
            widget("Global", Some("stray")),
            widget("Local", Some("a")),
            widget("Unknown", Some("a")),
            definition("Global", "Cluster"),
            definition("Local", "Namespaced"),
        ]);
        assert!(!cluster.namespaced("example.com/v1", "Global"));
        assert!(cluster.namespaced("example.com/v1", "Local"));
        assert!(
            cluster.namespaced("example.com/v1", "Unknown"),
            "a custom resource is taken to be namespaced"
        );
        assert!(
            cluster.namespaced("other.example.com/v1", "Global"),
            "another group's"
        );
        let get = |kind: &str, namespace: Option<&str>| {
            answer(
                &cluster,
                Request::KubernetesGetResource {
                    api_version: "example.com/v1".into(),
                    kind: kind.into(),
                    name: "w".into(),
                    namespace: namespace.map(str::to_string),
                    disable_cache: false,
                    field_masks: None,
                },
            )
        };
        assert_eq!(
            get("Global", None).unwrap()["metadata"]["namespace"],
            "stray"
        );
        assert!(get("Local", None).unwrap_err().contains("is namespaced"));
        assert!(get("Local", Some("a")).is_ok());
        let error = answer(
            &cluster,
            Request::KubernetesListResourceNamespace {
                api_version: "example.com/v1".into(),
                kind: "Global".into(),
                namespace: "a".into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            },
        )
        .unwrap_err();
        assert_eq!(
            error,
            "resource example.com/v1/Global is cluster wide. Cannot search for it inside of a namespace"
        );
    }

    #[test]
    fn the_later_of_two_identical_objects_wins() {
        let cluster = Cluster::new([
            pod("a", "p", json!({"v": "1"})),
            pod("a", "p", json!({"v": "2"})),
            pod("b", "p", json!({"v": "3"})),
        ]);
        let pods = cluster.objects("v1", "Pod");
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[0]["metadata"]["labels"]["v"], "2");
    }

    /// A map built by moving its values in: `json!` would copy them, with
    /// recursion.
    pub(super) fn map(fields: [(&str, Value); 2]) -> Value {
        Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    #[test]
    fn a_deep_list_of_lists_is_flattened() {
        let mut object = pod("a", "deep", json!({}));
        for _ in 0..100_000 {
            object = map([
                ("kind", json!("List")),
                ("items", Value::Array(vec![object])),
            ]);
        }
        let cluster = Cluster::new([object]);
        assert_eq!(cluster.len(), 1);
    }

    #[test]
    fn lists_answer_as_policy_server_does() {
        let mut annotated = pod("a", "p", json!({"app": "web"}));
        annotated["metadata"]["annotations"] = json!({
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "team": "x",
        });
        annotated["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
        let cluster = Cluster::new([
            annotated,
            pod("b", "q", json!({})),
            pod("a", "o", json!({})),
        ]);
        let list = answer(
            &cluster,
            Request::KubernetesListResourceNamespace {
                api_version: "v1".into(),
                kind: "Pod".into(),
                namespace: "a".into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            },
        )
        .unwrap();
        assert_eq!(list["apiVersion"], "v1");
        assert_eq!(list["kind"], "PodList");
        assert_eq!(list["metadata"], json!({}));
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["metadata"]["name"], "o");
        assert_eq!(items[0]["metadata"]["annotations"], json!({}));
        assert_eq!(items[0]["metadata"]["managedFields"], json!([]));
        assert_eq!(items[1]["metadata"]["annotations"], json!({"team": "x"}));
        assert_eq!(items[1]["metadata"]["managedFields"], json!([]));
        assert_eq!(
            list_all(&cluster, "Pod", None, None).unwrap(),
            ["a/o", "a/p", "b/q"]
        );
        assert_eq!(
            list_all(&cluster, "Secret", None, None).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_cluster_wide_kind_is_not_listed_in_a_namespace() {
        let cluster = Cluster::default();
        let error = answer(
            &cluster,
            Request::KubernetesListResourceNamespace {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                namespace: "a".into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            },
        )
        .unwrap_err();
        assert_eq!(
            error,
            "resource v1/Namespace is cluster wide. Cannot search for it inside of a namespace"
        );
    }

    #[test]
    fn the_object_being_created_is_found_by_no_lookup() {
        let service = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": name, "namespace": "shop"},
                   "spec": {"selector": {"app": "web"}}})
        };
        let cluster = Cluster::new([service("web"), service("other")]);
        let names = |cluster: &Cluster| -> Vec<String> {
            cluster
                .objects_in("v1", "Service", "shop")
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(&cluster), ["other", "web"]);
        Cluster::while_absent(&service("web"), || {
            assert_eq!(names(&cluster), ["other"]);
            assert_eq!(cluster.objects("v1", "Service").len(), 1);
            assert!(cluster.get("v1", "Service", Some("shop"), "web").is_none());
            assert!(
                cluster
                    .get("v1", "Service", Some("shop"), "other")
                    .is_some()
            );
        });
        // Found again once judged.
        assert_eq!(names(&cluster), ["other", "web"]);
    }

    #[test]
    fn gets_answer_the_object_or_say_why_not() {
        let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let cluster = Cluster::new([namespace.clone(), pod("a", "p", json!({}))]);
        let get = |api_version: &str,
                   kind: &str,
                   name: &str,
                   namespace: Option<&str>,
                   masks: Option<&[&str]>| {
            answer(
                &cluster,
                Request::KubernetesGetResource {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: name.into(),
                    namespace: namespace.map(str::to_string),
                    disable_cache: true,
                    field_masks: masks.map(|m| m.iter().map(|s| s.to_string()).collect()),
                },
            )
        };
        assert_eq!(
            get("v1", "Namespace", "a", None, None).unwrap(),
            namespace,
            "as given"
        );
        namespace.as_object_mut().unwrap().remove("spec");
        assert_eq!(
            get("v1", "Namespace", "a", None, Some(&["status"])).unwrap(),
            namespace
        );
        assert_eq!(
            get("v1", "Pod", "p", None, None).unwrap_err(),
            "Resource v1/Pod is namespaced, but no namespace was provided"
        );
        assert_eq!(
            get("v1", "Pod", "p", Some("b"), None).unwrap_err(),
            "Cannot find v1/Pod named 'p' inside of namespace 'Some(\"b\")'"
        );
        assert_eq!(
            get("v1", "Namespace", "z", None, None).unwrap_err(),
            "Cannot find v1/Namespace named 'z' inside of namespace 'None'"
        );
        assert_eq!(
            get("v1", "Pod", "p", Some("a"), None).unwrap()["metadata"]["name"],
            "p"
        );
    }

    #[test]
    fn plural_names_and_other_calls() {
        let cluster = Cluster::default();
        let plural = cluster
            .answer(&Request::KubernetesGetResourcePluralName {
                api_version: "networking.k8s.io/v1".into(),
                kind: "NetworkPolicy".into(),
            })
            .unwrap();
        assert_eq!(plural, br#""networkpolicies""#);
        let dns = Request::DNSLookupHost {
            host: "example.com".into(),
        };
        assert_eq!(cluster.answer(&dns), Err(unanswered(&dns)));
    }

    #[test]
    fn no_json_makes_it_panic() {
        let odd = [
            json!({"kind": "Pod", "metadata": {"name": "a", "namespace": 5, "labels": "x"}}),
            json!({"kind": "Pod", "metadata": {"name": "b", "annotations": [1], "labels": {"a": {"b": 1}}}, "spec": [1, {"nodeName": 2}]}),
            json!({"kind": 5, "metadata": {"name": "c"}}),
            json!({"kind": "Pod", "metadata": "m"}),
            json!({"kind": "List", "items": 5}),
            json!([1, 2]),
        ];
        let cluster = Cluster::new(odd);
        for selector in ["a", "!a", "a in (b)", "a>1", ""] {
            list_all(
                &cluster,
                "Pod",
                Some(selector),
                Some("spec.nodeName=2,status.podIP=,spec.hostNetwork=false"),
            )
            .unwrap();
        }
        let list = answer(
            &cluster,
            Request::KubernetesListResourceAll {
                api_version: "v1".into(),
                kind: "Pod".into(),
                label_selector: None,
                field_selector: None,
                field_masks: Some(["spec.nodeName".to_string(), "metadata".to_string()].into()),
            },
        )
        .unwrap();
        assert_eq!(list["items"].as_array().map(Vec::len), Some(2));
    }
}
