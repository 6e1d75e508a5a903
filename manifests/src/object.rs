//! The third stage of reading: what a thing parsed (a document's value, a
//! List's item, never a List: `list` split it) is to the check. An object,
//! with its file and line (and its place in a `List`); no object at all (a
//! note: a tool's configuration, a kustomize configuration, a template);
//! or an object the API server would refuse (unusable, with the reason
//! the fourth stage, `refusals`, gives). Its group and version are found
//! here once, for every test of both stages.

use std::marker::PhantomData;

use serde_json::Value;

use policy_core::kinds::ApiVersion;

use super::document::{Finish, Found};
use super::{Input, Learn, Manifest, Note, Source, Unusable, refusals, templates};

/// The stage after parsing, for the things of `file`: what each is to the
/// check, and what its user learns of it (`F`).
pub(super) struct Take<'f, F> {
    pub file: &'f str,
    pub learn: PhantomData<fn() -> F>,
}

impl<F: Learn> Finish<Input<F>> for Take<'_, F> {
    /// An object, a note, or what cannot be used; nothing for an empty
    /// document (`null`), which kubectl skips.
    fn finish(&self, found: Found) -> Option<Input<F>> {
        let source = |line, item| Source {
            file: self.file.to_string(),
            line,
            item,
        };
        Some(match found {
            Found::Object { value, .. } if value.is_null() => return None,
            Found::Object { line, value, json } => take_object(value, json, source(line, None)),
            Found::Item {
                line,
                index,
                value,
                json,
            } => take_object(value, json, source(line, Some(index))),
            Found::Unusable { line, item, reason } => Input::Unusable(Unusable {
                source: source(line, item),
                reason,
            }),
            Found::Template(line, text) => Input::Note(Note {
                source: source(line, None),
                text,
                unrendered: true,
            }),
            Found::Note(line, text) => Input::Note(Note {
                source: source(line, None),
                text,
                unrendered: false,
            }),
        })
    }
}

/// What `object`'s `apiVersion` names (a missing one names the core
/// group's empty version).
pub(super) fn api_version(object: &Value) -> ApiVersion<'_> {
    ApiVersion::of(
        object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    )
}

/// An object to check, or no object at all (a note), or an object that
/// cannot be used. `json`, where given, is `value`'s own JSON, as its
/// reader wrote it.
fn take_object<F: Learn>(value: Value, json: Option<String>, source: Source) -> Input<F> {
    // What its `apiVersion` names, found once for every test below.
    let api = api_version(&value);
    if let Some((text, unrendered)) = not_an_object(&value, source.item.is_some(), &api) {
        return Input::Note(Note {
            source,
            text,
            unrendered,
        });
    }
    let reason = match refusals::object_problem(&value, &api) {
        None => match F::learn(&value, &api) {
            Ok(facts) => {
                let json = json.unwrap_or_else(|| value.to_string());
                return Input::Manifest(Manifest {
                    source,
                    json,
                    facts,
                });
            }
            Err(reason) => reason,
        },
        Some(reason) => reason,
    };
    Input::Unusable(Unusable { source, reason })
}

/// What a document is when it is no object for the cluster, said in a note
/// (and whether a tool renders objects from it): a document without a
/// `kind` (not a List's item, which takes the List's), a tool's
/// configuration, a template, a kustomize configuration.
fn not_an_object(value: &Value, item: bool, api: &ApiVersion<'_>) -> Option<(String, bool)> {
    if !item && !value.get("kind").is_some_and(Value::is_string) {
        let what = crate::refusals::what(value);
        return Some((
            format!("not a Kubernetes object ({what}, without a `kind`): skipped"),
            false,
        ));
    }
    if let Some(config) = tool_config(value, api) {
        return Some((
            format!(
                "{config} without `metadata`, which every Kubernetes object has: a tool's own \
                 configuration (a kind cluster's, say), skipped; if it is meant for the cluster, \
                 give it `metadata.name`"
            ),
            false,
        ));
    }
    if let Some(template) = templates::in_metadata(value) {
        return Some((templates::note(&template), true));
    }
    served_by_no_cluster(value, api).map(|api_version| {
        let text = format!(
            "a kustomize configuration (`apiVersion: {api_version}`), which no cluster serves: \
             skipped; what it changes shows in what `kubectl kustomize` renders"
        );
        (text, false)
    })
}

/// `kind: Cluster` of `kind.x-k8s.io/v1alpha4`, for an object of another
/// group than Kubernetes' own that has no `metadata`: how a tool's
/// configuration file looks (kind's, k3d's), which no API server takes.
fn tool_config(value: &Value, api: &ApiVersion<'_>) -> Option<String> {
    let (kind, api_version) = (value["kind"].as_str()?, value["apiVersion"].as_str()?);
    let tool = value.get("metadata").is_none() && !api.kubernetes;
    tool.then(|| format!("`kind: {kind}` of `{api_version}`"))
}

/// The `apiVersion` of a kustomize transformer or generator configuration
/// (`builtin`, `kustomize.config.k8s.io/…`): input to kustomize, never an
/// object that a cluster stores.
fn served_by_no_cluster<'v>(value: &'v Value, api: &ApiVersion<'_>) -> Option<&'v str> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let kustomize = matches!(
        (api.group, api.version),
        ("", "builtin") | ("kustomize.config.k8s.io", _)
    );
    kustomize.then_some(api_version)
}
