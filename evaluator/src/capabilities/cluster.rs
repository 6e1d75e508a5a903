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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::capabilities::{Host, Request, rbac, unanswered};
use crate::kinds;

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

impl Cluster {
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
        self.kind(api_version, kind)
            .map(|objects| objects.values().collect())
            .unwrap_or_default()
    }

    /// The objects of a kind in one namespace, sorted by name.
    pub fn objects_in(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<&Value> {
        let Some(objects) = self.kind(api_version, kind) else {
            return Vec::new();
        };
        objects
            .range((namespace.to_string(), String::new())..)
            .take_while(|((ns, _), _)| ns == namespace)
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
        self.kind(api_version, kind)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<&BTreeMap<(String, String), Value>> {
        let (group, _) = kinds::group_version(api_version);
        self.index.get(&(group.to_string(), kind.to_string()))
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
        let mask = list.field_masks.map(Mask::new);
        let candidates: Vec<&Value> = match list.namespace {
            Some(namespace) => self.objects_in(list.api_version, list.kind, namespace),
            None => self.objects(list.api_version, list.kind),
        };
        let items = candidates
            .into_iter()
            .filter(|object| labels.as_ref().is_none_or(|s| s.matches(object)))
            .filter(|object| fields.as_ref().is_none_or(|s| s.matches(object)))
            .map(|object| {
                let mut item = object.clone();
                as_reflected(&mut item);
                if let Some(mask) = &mask {
                    mask.prune_object(&mut item);
                }
                item
            })
            .collect();
        let mut answer = Map::new();
        answer.insert("apiVersion".into(), Value::String(list.api_version.into()));
        answer.insert("kind".into(), Value::String(format!("{}List", list.kind)));
        answer.insert("metadata".into(), Value::Object(Map::new()));
        answer.insert("items".into(), Value::Array(items));
        Ok(Value::Object(answer))
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

/// Field masks as policy-evaluator applies them (`field_mask.rs`): a tree
/// of the dot paths; a path's last field is kept whole; arrays are passed
/// through to their items; no paths at all keeps everything. They prune
/// what kube-rs calls an object's data: `apiVersion`, `kind` and
/// `metadata` are always kept.
struct Mask {
    /// An arena, so that neither building nor dropping a deep mask recurses.
    nodes: Vec<BTreeMap<String, usize>>,
}

impl Mask {
    fn new(paths: &BTreeSet<String>) -> Mask {
        let mut nodes = vec![BTreeMap::new()];
        for path in paths {
            let mut at = 0;
            for part in path.split('.') {
                at = match nodes[at].get(part) {
                    Some(&child) => child,
                    None => {
                        let child = nodes.len();
                        nodes.push(BTreeMap::new());
                        nodes[at].insert(part.to_string(), child);
                        child
                    }
                };
            }
        }
        Mask { nodes }
    }

    fn prune_object(&self, object: &mut Value) {
        let Some(map) = object.as_object_mut() else {
            return;
        };
        let root = &self.nodes[0];
        if root.is_empty() {
            return;
        }
        let mut pending = Vec::new();
        map.retain(|key, _| {
            matches!(key.as_str(), "apiVersion" | "kind" | "metadata") || root.contains_key(key)
        });
        for (key, value) in map.iter_mut() {
            if let Some(&child) = root.get(key)
                && !matches!(key.as_str(), "apiVersion" | "kind" | "metadata")
            {
                pending.push((value, child));
            }
        }
        self.prune(pending);
    }

    fn prune(&self, mut pending: Vec<(&mut Value, usize)>) {
        while let Some((value, node)) = pending.pop() {
            let children = &self.nodes[node];
            if children.is_empty() {
                continue;
            }
            match value {
                Value::Object(map) => {
                    map.retain(|key, _| children.contains_key(key));
                    for (key, value) in map.iter_mut() {
                        if let Some(&child) = children.get(key) {
                            pending.push((value, child));
                        }
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut().map(|item| (item, node))),
                _ => {}
            }
        }
    }
}

/// A string as Go's `%q` writes it, which the API server's messages use.
pub(crate) fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(quoted, "\\x{:02x}", c as u32);
            }
            c if !printable(c) => {
                let _ = match c as u32 {
                    code @ 0..=0xffff => write!(quoted, "\\u{code:04x}"),
                    code => write!(quoted, "\\U{code:08x}"),
                };
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Go's `unicode.IsPrint`, near enough for names: no control, no space
/// but ' ', no format character, no private use.
fn printable(c: char) -> bool {
    let code = c as u32;
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            code,
            0xad | 0x600..=0x605
                | 0x61c
                | 0x6dd
                | 0x70f
                | 0x180e
                | 0x200b..=0x200f
                | 0x202a..=0x202e
                | 0x2060..=0x206f
                | 0xe000..=0xf8ff
                | 0xfeff
                | 0xfff9..=0xfffb
                | 0xf0000..
        ))
}

/// The labels of an object: only string values are labels.
fn label<'o>(object: &'o Value, key: &str) -> Option<&'o str> {
    object.get("metadata")?.get("labels")?.get(key)?.as_str()
}

// Label selectors, as `k8s.io/apimachinery/pkg/labels` parses and matches
// them: the same tokens, grammar, validation and error texts.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted, without duplicates.
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, object: &Value) -> bool {
        let value = label(object, &self.key);
        let has = |v: &str| self.values.iter().any(|w| w == v);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(has),
            Operator::NotIn | Operator::NotEquals => !value.is_some_and(has),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(have)) = value.map(str::parse::<i64>) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                match self.operator {
                    Operator::GreaterThan => have > want,
                    _ => have < want,
                }
            }
        }
    }
}

#[derive(Debug)]
struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut lexer = Lexer {
            text: text.as_bytes(),
            at: 0,
        };
        let mut items = Vec::new();
        loop {
            let (token, literal) = lexer.lex();
            items.push((token, literal));
            if token == Token::End {
                break;
            }
        }
        Parser { items, at: 0 }.parse().map(LabelSelector)
    }

    fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|requirement| requirement.matches(object))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(text: &[u8]) -> Option<Token> {
    Some(match text {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Bytes, as Go's lexer reads them: a NUL reads as the end.
struct Lexer<'t> {
    text: &'t [u8],
    at: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.text.get(self.at) {
            Some(&byte) => {
                self.at += 1;
                byte
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.at = self.at.saturating_sub(1);
    }

    fn lex(&mut self) -> (Token, String) {
        let mut byte = self.read();
        while whitespace(byte) {
            byte = self.read();
        }
        if byte == 0 {
            return (Token::End, String::new());
        }
        self.unread();
        match special(byte) {
            true => self.special(),
            false => self.identifier(),
        }
    }

    fn identifier(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if special(byte) || whitespace(byte) {
                self.unread();
                break;
            }
            buffer.push(byte);
        }
        let token = keyword(&buffer).unwrap_or(Token::Identifier);
        (token, String::from_utf8_lossy(&buffer).into_owned())
    }

    fn special(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        let mut last: Option<(Token, usize)> = None;
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if !special(byte) {
                self.unread();
                break;
            }
            buffer.push(byte);
            match keyword(&buffer) {
                Some(token) => last = Some((token, buffer.len())),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match last {
            Some((token, len)) => (token, String::from_utf8_lossy(&buffer[..len]).into_owned()),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buffer)
                ),
            ),
        }
    }
}

struct Parser {
    items: Vec<(Token, String)>,
    at: usize,
}

/// Whether `in` and `notin` are values here, as in `a in (in)`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

impl Parser {
    fn peek(&self, context: Context) -> (Token, &str) {
        let (token, literal) = self
            .items
            .get(self.at)
            .map(|(token, literal)| (*token, literal.as_str()))
            .unwrap_or((Token::End, ""));
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn next(&mut self, context: Context) -> (Token, String) {
        let (token, literal) = self.peek(context);
        let literal = literal.to_string();
        self.at += 1;
        (token, literal)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.peek(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.next(Context::Values);
                    match token {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (token, literal) = self.peek(Context::Values);
                            if token != Token::Identifier && token != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return requirement(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        requirement(key, operator, values.into_iter().collect())
    }

    fn key_and_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.next(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.next(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errors = label_key_errors(&literal);
        if !errors.is_empty() {
            // The parser validates with no field path, which Go prints so.
            return Err(invalid("<nil>", &literal, &errors.join("; ")));
        }
        if matches!(self.peek(Context::Values).0, Token::End | Token::Comma)
            && operator != Some(Operator::DoesNotExist)
        {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.next(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.next(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.peek(Context::Values);
        let literal = literal.to_string();
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                if self.next(Context::Values).0 != Token::ClosedPar {
                    // Go names the token before the list here, not the one
                    // it found.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.next(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.next(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (token, literal) = self.peek(Context::Values);
                    match token {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek(Context::Values).0 {
                        Token::ClosedPar => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.peek(Context::Values).0, Token::End | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.next(Context::Values);
        match token {
            Token::Identifier => Ok(BTreeSet::from([literal])),
            _ => Err(format!("found '{literal}', expected: identifier")),
        }
    }
}

/// A requirement, checked as `labels.NewRequirement` checks it (the key
/// was checked as it was read).
fn requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(invalid(
                    &format!("values[{i}]"),
                    value,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = label_value_errors(value);
        if !problems.is_empty() {
            errors.push(invalid(
                &format!("values[{i}][{key}]"),
                value,
                &problems.join("; "),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(aggregate(errors));
    }
    Ok(Requirement {
        key,
        operator,
        values,
    })
}

/// A field error as `field.Invalid` words it for a string value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", quote(value))
}

/// Errors as Go's aggregate words them: one alone, several bracketed, each
/// once.
pub(crate) fn aggregate(errors: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<String> = errors
        .into_iter()
        .filter(|error| seen.insert(error.clone()))
        .collect();
    match unique.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

const LABEL_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// A validation message with its examples, as Go's `RegexError` writes it.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, whole.
fn label_shaped(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// An RFC 1123 subdomain, lowercase.
fn subdomain_shaped(text: &str) -> bool {
    text.split('.').all(|part| {
        let bytes = part.as_bytes();
        let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                edge(first) && edge(last) && bytes.iter().all(|b| edge(b) || *b == b'-')
            }
            _ => false,
        }
    })
}

/// What is wrong with a label key (`content.IsLabelKey`).
fn label_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !subdomain_shaped(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        regex_error(SUBDOMAIN_MESSAGE, SUBDOMAIN_FORMAT, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MESSAGE, LABEL_FORMAT, &["MyName", "my.name", "123-abc"])
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_string());
    }
    if !label_shaped(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MESSAGE,
                LABEL_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// What is wrong with a label value (`content.IsLabelValue`).
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !label_shaped(value) {
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            &format!("({LABEL_FORMAT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

// Field selectors, as `k8s.io/apimachinery/pkg/fields` parses them and the
// API server then checks each field against the kind's selectable fields.

#[derive(Debug)]
struct FieldSelector(Vec<Term>);

#[derive(Debug)]
struct Term {
    read: Read,
    value: String,
    equal: bool,
}

/// How a selectable field reads from an object (the API server's field
/// sets, in `pkg/registry/*/strategy.go`, read from the served JSON).
#[derive(Debug, Clone)]
enum Read {
    /// A string at a dot path; absent is "".
    Text(String),
    /// A boolean; absent is false.
    Flag(&'static str),
    /// An integer; absent is 0.
    Count(&'static str),
    /// A Pod's first IP.
    PodIp,
    /// A core Event's source: its component, else its reporting controller.
    EventSource,
    /// Accepted but in no field set, so always "".
    Empty,
}

impl FieldSelector {
    fn parse(text: &str, group: &str, version: &str, kind: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(text);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|part| !part.is_empty()) {
            let Some((field, operator, value)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            terms.push((field, operator != "!=", unescape(value)?));
        }
        let mut selected = Vec::new();
        for (field, equal, value) in terms {
            let read = selectable(group, version, kind, field)?;
            // Go's `Transform` drops a term of no field and no value.
            if matches!(&read, Read::Text(path) if path.is_empty()) && value.is_empty() {
                continue;
            }
            selected.push(Term { read, value, equal });
        }
        Ok(FieldSelector(selected))
    }

    fn matches(&self, object: &Value) -> bool {
        self.0
            .iter()
            .all(|term| (field_value(object, &term.read) == term.value) == term.equal)
    }
}

/// The terms between unescaped commas, escapes kept.
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&text[start..at]);
            start = at + 1;
        }
    }
    terms.push(&text[start..]);
    terms
}

/// A term's field, operator and raw value, split at the first operator.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (at, _) in term.char_indices() {
        for operator in ["!=", "==", "="] {
            if term[at..].starts_with(operator) {
                return Some((&term[..at], operator, &term[at + operator.len()..]));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, String> {
    let mut unescaped = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            match c {
                '\\' | ',' | '=' => unescaped.push(c),
                c => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ));
                }
            }
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Go prints the rune as its number here.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => unescaped.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(unescaped)
}

/// Whether the API server lets a field select a kind, and how it reads:
/// its field label conversions (`pkg/apis/*/*/conversion.go`) and their
/// messages. A custom resource's selectable fields are its
/// CustomResourceDefinition's, which may not be given: any field of one is
/// taken, read at its path.
fn selectable(group: &str, version: &str, kind: &str, field: &str) -> Result<Read, String> {
    let text = |path: &str| Ok(Read::Text(path.to_string()));
    let unsupported = || Err(format!("field label not supported: {field}"));
    match (group, kind) {
        ("", "Pod") => match field {
            "metadata.name"
            | "metadata.namespace"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.schedulerName"
            | "spec.serviceAccountName"
            | "status.phase"
            | "status.nominatedNodeName" => text(field),
            "spec.hostNetwork" => Ok(Read::Flag("spec.hostNetwork")),
            "status.podIP" => Ok(Read::PodIp),
            "status.podIPs" => Ok(Read::Empty),
            "spec.host" => text("spec.nodeName"),
            _ => unsupported(),
        },
        ("", "Node") => match field {
            "metadata.name" => text(field),
            "spec.unschedulable" => Ok(Read::Flag("spec.unschedulable")),
            _ => unsupported(),
        },
        ("", "ReplicationController") => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            "status.replicas" => Ok(Read::Count("status.replicas")),
            _ => unsupported(),
        },
        ("", "Event") => match field {
            "involvedObject.kind"
            | "involvedObject.namespace"
            | "involvedObject.name"
            | "involvedObject.uid"
            | "involvedObject.apiVersion"
            | "involvedObject.resourceVersion"
            | "involvedObject.fieldPath"
            | "reason"
            | "reportingComponent"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => text(field),
            "source" => Ok(Read::EventSource),
            _ => unsupported(),
        },
        ("", "Namespace") => match field {
            "status.phase" | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("", "Secret") => match field {
            "type" | "metadata.namespace" | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("", "Service") => match field {
            "metadata.namespace" | "metadata.name" | "spec.clusterIP" | "spec.type" => text(field),
            _ => unsupported(),
        },
        ("batch", "Job") => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            "status.successful" => Ok(Read::Count("status.succeeded")),
            _ => Err(format!(
                "field label {} not supported for Job",
                quote(field)
            )),
        },
        ("certificates.k8s.io", "CertificateSigningRequest" | "ClusterTrustBundle") => {
            match field {
                "metadata.name" | "spec.signerName" => text(field),
                _ => unsupported(),
            }
        }
        ("certificates.k8s.io", "PodCertificateRequest") => match field {
            "metadata.name" | "spec.signerName" | "spec.podName" | "spec.nodeName" => text(field),
            _ => unsupported(),
        },
        ("events.k8s.io", "Event") => match field {
            "regarding.kind"
            | "regarding.namespace"
            | "regarding.name"
            | "regarding.uid"
            | "regarding.apiVersion"
            | "regarding.resourceVersion"
            | "regarding.fieldPath"
            | "reportingController"
            | "reason"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => text(field),
            _ => unsupported(),
        },
        ("resource.k8s.io", "ResourceSlice") => match field {
            "metadata.name" | "spec.nodeName" | "spec.driver" => text(field),
            _ => Err(format!(
                "field label not supported for {group}/{version}, Kind={kind}: {field}"
            )),
        },
        _ if kinds::kubernetes_group(group) => match field {
            "metadata.name" | "metadata.namespace" => text(field),
            _ => Err(format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                quote(field)
            )),
        },
        _ => text(field),
    }
}

/// The value at a dot path, without recursion.
fn at_path<'o>(object: &'o Value, path: &str) -> Option<&'o Value> {
    path.split('.')
        .try_fold(object, |value, part| value.get(part))
}

/// A scalar as the API server's field sets write it.
fn scalar(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn field_value(object: &Value, read: &Read) -> String {
    match read {
        Read::Text(path) => scalar(at_path(object, path)).unwrap_or_default(),
        Read::Flag(path) => scalar(at_path(object, path)).unwrap_or_else(|| "false".into()),
        Read::Count(path) => scalar(at_path(object, path)).unwrap_or_else(|| "0".into()),
        Read::PodIp => at_path(object, "status.podIPs")
            .and_then(|ips| ips.get(0))
            .and_then(|ip| scalar(ip.get("ip")))
            .or_else(|| scalar(at_path(object, "status.podIP")))
            .unwrap_or_default(),
        Read::EventSource => scalar(at_path(object, "source.component"))
            .filter(|source| !source.is_empty())
            .or_else(|| scalar(object.get("reportingComponent")))
            .unwrap_or_default(),
        Read::Empty => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(namespace: &str, name: &str, labels: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        })
    }

    fn answer(cluster: &Cluster, request: Request) -> Result<Value, String> {
        cluster
            .answer(&request)
            .map(|bytes| serde_json::from_slice(&bytes).expect("the answer is JSON"))
    }

    fn list_all(
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

    fn labelled(labels: &[(&str, Value)]) -> Cluster {
        Cluster::new(
            labels
                .iter()
                .map(|(name, labels)| pod("ns", name, labels.clone())),
        )
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
    fn map(fields: [(&str, Value); 2]) -> Value {
        Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// Drops a deep value without recursion.
    fn drop_deep(value: Value) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::Array(items) => pending.extend(items),
                Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
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
    fn field_masks_prune_as_policy_evaluator_does() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
            "spec": {
                "containers": [
                    {"name": "a", "image": "i", "ports": [[{"containerPort": 80, "name": "http"}]]},
                    {"name": "b", "image": "j"},
                    "scalar",
                ],
                "nodeName": "n",
            },
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        });
        let pruned = |masks: &[&str]| {
            let mut object = object.clone();
            Mask::new(&masks.iter().map(|s| s.to_string()).collect()).prune_object(&mut object);
            object
        };
        assert_eq!(pruned(&[]), object, "no paths keeps everything");
        assert_eq!(
            pruned(&["spec.containers.image", "status"]),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
                "spec": {"containers": [{"image": "i"}, {"image": "j"}, "scalar"]},
                "status": {"phase": "Running", "podIP": "10.0.0.1"},
            })
        );
        assert_eq!(
            pruned(&["spec.containers.ports.name"])["spec"],
            json!({"containers": [{"ports": [[{"name": "http"}]]}, {}, "scalar"]}),
            "arrays in arrays are passed through"
        );
        // A longer path narrows a shorter one, as in the tree it builds.
        assert_eq!(
            pruned(&["status", "status.phase"])["status"],
            json!({"phase": "Running"})
        );
        // metadata is no part of the data a mask prunes.
        assert_eq!(
            pruned(&["metadata.name"]),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "a", "labels": {"x": "y"}},
            })
        );
        assert_eq!(
            pruned(&[""])["spec"],
            Value::Null,
            "an empty path keeps a field named \"\""
        );

        let cluster = Cluster::new([object.clone()]);
        let list = answer(
            &cluster,
            Request::KubernetesListResourceAll {
                api_version: "v1".into(),
                kind: "Pod".into(),
                label_selector: None,
                field_selector: None,
                field_masks: Some(["spec.nodeName".to_string()].into()),
            },
        )
        .unwrap();
        assert_eq!(list["items"][0]["spec"], json!({"nodeName": "n"}));
        assert!(list["items"][0].get("status").is_none());
    }

    #[test]
    fn a_deep_array_is_pruned_without_recursion() {
        let mut deep = json!({"keep": 1, "drop": 2});
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut object = map([("kind", json!("X")), ("spec", deep)]);
        Mask::new(&["spec.keep".to_string()].into()).prune_object(&mut object);
        let mut at = &object["spec"];
        while let Value::Array(items) = at {
            at = &items[0];
        }
        assert_eq!(at, &json!({"keep": 1}));
        drop_deep(object);
    }

    #[test]
    fn label_selectors_match_with_every_operator() {
        let cluster = labelled(&[
            ("a", json!({"app": "web", "tier": "front", "n": "5"})),
            ("b", json!({"app": "db", "n": "12"})),
            ("c", json!({"tier": "back", "n": "x"})),
            ("d", json!({"app": 1})),
        ]);
        let select = |selector: &str| list_all(&cluster, "Pod", Some(selector), None);
        let ok = |names: &[&str]| Ok(names.iter().map(|n| format!("ns/{n}")).collect::<Vec<_>>());
        assert_eq!(select("app=web"), ok(&["a"]));
        assert_eq!(select("app==web"), ok(&["a"]));
        assert_eq!(
            select("app!=web"),
            ok(&["b", "c", "d"]),
            "absent matches !="
        );
        assert_eq!(select("app in (web,db)"), ok(&["a", "b"]));
        assert_eq!(select("app notin (web)"), ok(&["b", "c", "d"]));
        assert_eq!(
            select("app"),
            ok(&["a", "b"]),
            "a non-string label is no label"
        );
        assert_eq!(select("!app"), ok(&["c", "d"]));
        assert_eq!(select("app,tier"), ok(&["a"]));
        assert_eq!(select(" app = web , tier in ( front ) "), ok(&["a"]));
        assert_eq!(select("n>6"), ok(&["b"]));
        assert_eq!(select("n<6"), ok(&["a"]));
        assert_eq!(
            select("tier in (in, front)"),
            ok(&["a"]),
            "in is a value there"
        );
        assert_eq!(select("app="), ok(&[]), "an empty value");
        assert_eq!(select("tier notin ()"), ok(&["a", "b", "c", "d"]));
        assert_eq!(select(""), ok(&["a", "b", "c", "d"]));
    }

    #[test]
    fn malformed_label_selectors_say_what_is_wrong() {
        let cluster = labelled(&[("a", json!({}))]);
        let error = |selector: &str| list_all(&cluster, "Pod", Some(selector), None).unwrap_err();
        // The API server's texts (apimachinery v0.36 `labels.Parse`).
        let name_part = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_part = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        for (selector, message) in [
            ("app in", "unable to parse requirement: found '' expected: '('".to_string()),
            ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'".to_string()),
            ("app (a)", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt".to_string()),
            ("app=web\0garbage", "found 'garbage', expected: ',' or 'end of string'".to_string()),
            ("app in a", "unable to parse requirement: found 'a' expected: '('".to_string()),
            ("app in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".to_string()),
            ("app in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".to_string()),
            ("app in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier".to_string()),
            ("app==(", "unable to parse requirement: found '(', expected: identifier".to_string()),
            ("app=a b", "found 'b', expected: ',' or 'end of string'".to_string()),
            ("app,", "found '', expected: identifier after ','".to_string()),
            ("=a", "found '=', expected: !, identifier, or 'end of string'".to_string()),
            ("!", "unable to parse requirement: found '', expected: identifier".to_string()),
            ("!app=a", "found '=', expected: ',' or 'end of string'".to_string()),
            ("-app", format!("unable to parse requirement: <nil>: Invalid value: \"-app\": {name_part}")),
            ("a/b/c", "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()),
            ("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".to_string()),
            ("Ex.com/", format!("unable to parse requirement: <nil>: Invalid value: \"Ex.com/\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'); name part must be non-empty; {name_part}")),
            ("app=-x", format!("unable to parse requirement: values[0][app]: Invalid value: \"-x\": {value_part}")),
            ("n>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".to_string()),
            ("n<-x", format!("unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][n]: Invalid value: \"-x\": {value_part}]")),
        ] {
            assert_eq!(error(selector), format!("label selector {}: {message}", quote(selector)), "{selector}");
        }
        let long = "a".repeat(64);
        assert!(error(&long).contains("name part must be no more than 63 bytes"));
        assert!(error(&format!("a={long}")).ends_with(": must be no more than 63 bytes"));
    }

    #[test]
    fn field_selectors_read_the_kinds_selectable_fields() {
        let mut running = pod("a", "running", json!({}));
        running["status"] = json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]});
        running["spec"]["hostNetwork"] = json!(true);
        let mut pending = pod("b", "pending", json!({}));
        pending["spec"]["nodeName"] = json!("node-2");
        pending["status"] = json!({"phase": "Pending", "podIP": "10.0.0.2"});
        let cluster = Cluster::new([
            running,
            pending,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}, "type": "Opaque"}),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"unschedulable": true}}),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "a"}, "status": {"succeeded": 1}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "a"}, "spec": {"color": "red"}}),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "a"}, "reportingComponent": "kubelet"}),
        ]);
        let select = |kind: &str, selector: &str| list_all(&cluster, kind, None, Some(selector));
        let ok = |names: &[&str]| Ok(names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(select("Pod", "metadata.name=running"), ok(&["a/running"]));
        assert_eq!(select("Pod", "metadata.namespace!=a"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "status.phase==Running,spec.nodeName=node-1"),
            ok(&["a/running"])
        );
        assert_eq!(select("Pod", "spec.host=node-2"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "spec.hostNetwork=false"),
            ok(&["b/pending"]),
            "absent is false"
        );
        assert_eq!(select("Pod", "status.podIP=10.0.0.1"), ok(&["a/running"]));
        assert_eq!(select("Pod", "status.podIP=10.0.0.2"), ok(&["b/pending"]));
        assert_eq!(
            select("Pod", "status.podIPs="),
            ok(&["a/running", "b/pending"])
        );
        assert_eq!(select("Pod", ""), ok(&["a/running", "b/pending"]));
        assert_eq!(select("Pod", "metadata.name=running,"), ok(&["a/running"]));
        assert_eq!(select("Secret", "type=Opaque"), ok(&["a/s"]));
        assert_eq!(select("Node", "spec.unschedulable=false"), ok(&["n2"]));
        assert_eq!(select("batch/v1/Job", "status.successful=1"), ok(&["a/j"]));
        assert_eq!(
            select("apps/v1/Deployment", "metadata.name=d"),
            ok(&["a/d"])
        );
        assert_eq!(
            select("example.com/v1/Widget", "spec.color=red"),
            ok(&["a/w"])
        );
        assert_eq!(select("Event", "source=kubelet"), ok(&["a/e"]));

        let error = |kind: &str, selector: &str| {
            let message = select(kind, selector).unwrap_err();
            let prefix = format!("field selector {}: ", quote(selector));
            message
                .strip_prefix(&prefix)
                .map(str::to_string)
                .unwrap_or(message)
        };
        assert_eq!(
            error("Pod", "spec.containers=x"),
            "field label not supported: spec.containers"
        );
        assert_eq!(
            error("Node", "metadata.namespace=x"),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            error("apps/v1/Deployment", "spec.replicas=1"),
            "\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            error("batch/v1/Job", "status.failed=1"),
            "field label \"status.failed\" not supported for Job"
        );
        assert_eq!(
            error("Pod", "metadata.name"),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert_eq!(
            error("Pod", "metadata.name=a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            error("Pod", "metadata.name=a\\x"),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            error("Pod", "metadata.name=a\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
        assert_eq!(
            error("resource.k8s.io/v1/ResourceSlice", "spec.pool=x"),
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool"
        );
    }

    #[test]
    fn field_values_unescape() {
        let cluster = Cluster::new([
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a,b=c\\d", "namespace": "n"}}),
        ]);
        assert_eq!(
            list_all(
                &cluster,
                "Secret",
                None,
                Some("metadata.name=a\\,b\\=c\\\\d")
            ),
            Ok(vec!["n/a,b=c\\d".to_string()])
        );
    }

    #[test]
    fn go_quotes_as_go_does() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("\n\t\u{1}\u{7f}"), r#""\n\t\x01\x7f""#);
        assert_eq!(quote("é\u{a0}\u{200b}"), "\"é\\u00a0\\u200b\"");
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
