//! The module as a validating webhook, answering AdmissionReview v1 over
//! HTTPS the way policy-server does: the review's request goes to the module
//! as Kubewarden's ValidationRequest (`{"request": …, "settings": …}`) and its
//! ValidationResponse comes back wrapped in an AdmissionReview response.
//!
//! It answers at `/validate/<policy>` (the API server's calls) and at
//! `/audit/<policy>` (the audit scanner's), alike: policy-server answers an
//! audit as a validation, without a monitor mode's conversion, which this
//! server does not have.
//!
//! It serves one policy: its settings, or a policy group (`group`), whose
//! rejection says the group's message, each rejecting member's message in
//! `status.details.causes` as policy-server puts it there.
//!
//! A policy that changes the object answers with the JSONPatch, as a
//! mutating webhook does, where its `spec.mutating` lets it (a policy run
//! with settings alone may); one that may not is refused as policy-server
//! refuses it.
//!
//! This stands in for policy-server in the cluster tests (`cluster/run`) and
//! in experiments, and nowhere else: its host calls are answered by
//! nothing, and its `/metrics` say where a review's time goes (`metrics`),
//! not policy-server's series. Users run policy-server.

mod metrics;

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::admission::Policy as Declared;
use metrics::{Metrics, Timed, seconds};
use policy_evaluator::group::{Judged, Judging};
use policy_evaluator::response::{AdmissionResponse, PatchType};
use policy_evaluator::{CompiledPolicy, HostError, Limits, Policy, WAPC_TIMEOUT};

/// Where the webhook listens and what it answers with.
pub struct Options {
    pub module: PathBuf,
    /// The policy: its settings, or a group's members. Every member's
    /// settings are checked with `validate_settings` before anything
    /// listens, as policy-server refuses to start without them.
    pub policy: Declared,
    pub listen: SocketAddr,
    /// PEM files of the serving certificate (its chain) and its key.
    pub certificate: PathBuf,
    pub key: PathBuf,
    /// A file to which each review received and its answer are appended,
    /// one JSON line each: `{"review": …, "response": …}`.
    pub record: Option<PathBuf>,
    /// What bounds each evaluation: `--policy-timeout` (a member's
    /// `timeoutEvalSeconds` instead, where it has one), `--max-memory`.
    pub limits: Limits,
}

#[derive(Deserialize)]
struct Review<'a> {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(borrow)]
    request: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RequestUid {
    uid: String,
}

/// The `response` of an AdmissionReview, as policy-server fills it.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub uid: String,
    pub allowed: bool,
    /// `JSONPatch` when the policy changed the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    /// The change, a JSONPatch, base64-encoded: what a mutating webhook
    /// hands the API server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Status {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
}

/// A group's rejection: what each member that rejected said.
#[derive(Debug, Serialize, PartialEq)]
pub struct Details {
    pub causes: Vec<Cause>,
}

/// A member's part, as policy-server names it: the field
/// `spec.policies.<member>` of the group.
#[derive(Debug, Serialize, PartialEq)]
pub struct Cause {
    pub field: String,
    pub message: String,
}

/// Why a review got no answer from the module: the API server hears it as
/// an HTTP error, which a `failurePolicy: Fail` webhook turns into a refusal.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// The body is no AdmissionReview v1 with a request and its uid (400).
    BadReview(String),
    /// The module could not be instantiated (500).
    Module(String),
}

/// The AdmissionReview that answers `body`, judged by `instance` as
/// `judging` says.
pub fn answer(instance: &Policy, judging: &Judging, body: &[u8]) -> Result<Value, Refusal> {
    answer_each(&|_| instance, judging, body)
}

/// As [`answer`], each member of a group on its own instance.
fn answer_each<'a>(
    instance: &dyn Fn(usize) -> &'a Policy,
    judging: &Judging,
    body: &[u8],
) -> Result<Value, Refusal> {
    let bad = |reason: String| Refusal::BadReview(reason);
    let review: Review =
        serde_json::from_slice(body).map_err(|e| bad(format!("not an AdmissionReview: {e}")))?;
    match (review.api_version.as_deref(), review.kind.as_deref()) {
        (Some("admission.k8s.io/v1"), Some("AdmissionReview")) => {}
        (version, kind) => {
            return Err(bad(format!(
                "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {version:?}, kind {kind:?}"
            )));
        }
    }
    let request = review
        .request
        .ok_or_else(|| bad("the AdmissionReview has no request".to_string()))?;
    let uid = serde_json::from_str::<RequestUid>(request.get())
        .map_err(|e| bad(format!("the request has no uid: {e}")))?
        .uid;
    // A policy that fails (a trap, its deadline) is answered as
    // policy-server answers it: a rejection of code 500 in its words.
    let judged = judging.judge_each(instance, request.get().as_bytes());
    Ok(review_answer(uid, judged, request.get().as_bytes()))
}

/// policy-server's answer to a review whose policy could not start within
/// its deadline (policy-server's `api/service.rs`).
fn timed_out(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let uid = review["request"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": Response {
            uid,
            allowed: false,
            patch_type: None,
            patch: None,
            status: Some(Status {
                message: WAPC_TIMEOUT.to_string(),
                code: Some(500),
                details: None,
            }),
            audit_annotations: None,
            warnings: None,
        },
    })
}

fn review_answer(uid: String, judged: Judged, request: &[u8]) -> Value {
    let Judged {
        verdict, causes, ..
    } = judged;
    // A mutation as policy-server sends it: the JSONPatch from the
    // request's object (which a mutating policy only answers with where it
    // may mutate: `Judging` refuses it otherwise).
    let (patch_type, patch) = match verdict.mutated_object.is_some() || verdict.patch.is_some() {
        true => {
            let object = request_object(request);
            let response = AdmissionResponse::from_verdict(&uid, object.as_ref(), &verdict);
            (response.patch_type, response.patch)
        }
        false => (None, None),
    };
    let details = (!causes.is_empty()).then(|| Details {
        causes: causes
            .into_iter()
            .map(|c| Cause {
                field: format!("spec.policies.{}", c.member),
                message: c.message,
            })
            .collect(),
    });
    let status = match verdict.accepted {
        true => None,
        false => Some(Status {
            message: verdict.message.unwrap_or_default(),
            code: verdict.code,
            details,
        }),
    };
    let response = Response {
        uid,
        allowed: verdict.accepted,
        patch_type,
        patch,
        status,
        audit_annotations: verdict.audit_annotations,
        warnings: verdict.warnings,
    };
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    })
}

/// The object a request asks to write; `None` without one.
fn request_object(request: &[u8]) -> Option<Value> {
    #[derive(Deserialize)]
    struct Object {
        #[serde(default)]
        object: Option<Value>,
    }
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    Object::deserialize(&mut de).ok().and_then(|o| o.object)
}

struct Shared {
    compiled: CompiledPolicy,
    /// What bounds each member's instance, in member order.
    limits: Vec<Limits>,
    judging: Judging,
    record: Option<Mutex<File>>,
    metrics: Arc<Metrics>,
}

thread_local! {
    /// One instance a member on each worker thread, as policy-server keeps
    /// one a worker.
    static INSTANCES: RefCell<Vec<Policy>> = const { RefCell::new(Vec::new()) };
}

impl Shared {
    fn judge(&self, body: &[u8]) -> Result<Value, Refusal> {
        INSTANCES.with(|cell| {
            let mut instances = cell.borrow_mut();
            while instances.len() < self.limits.len() {
                let limits = self.limits[instances.len()];
                match self.compiled.instantiate_bounded(Arc::default(), limits) {
                    Ok(policy) => instances.push(policy),
                    // policy-server answers a module whose start ran past
                    // its deadline as a timed-out evaluation.
                    Err(HostError::Timeout { .. }) => return Ok(timed_out(body)),
                    Err(e) => return Err(Refusal::Module(e.to_string())),
                }
                self.metrics.instances.inc();
            }
            let instances = &*instances;
            answer_each(&|member| &instances[member], &self.judging, body)
        })
    }

    fn write_down(&self, body: &[u8], response: &Value) {
        let Some(file) = &self.record else { return };
        let review = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
        let mut line = serde_json::to_vec(&serde_json::json!({
            "review": review,
            "response": response,
        }))
        .expect("JSON values serialize");
        line.push(b'\n');
        let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(e) = file.write_all(&line).and_then(|()| file.flush()) {
            eprintln!("serve: cannot record a review: {e}");
        }
    }
}

/// Checks the settings, then answers reviews until the process is stopped.
pub fn serve(options: Options) -> Result<(), String> {
    let compiled = CompiledPolicy::from_file(&options.module).map_err(|e| e.to_string())?;
    let limits: Vec<Limits> = (0..options.policy.timeouts.len().max(1))
        .map(|member| options.policy.limits(member, &options.limits))
        .collect();
    let instances = limits
        .iter()
        .map(|limits| compiled.instantiate_bounded(Arc::default(), *limits))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", options.policy.name))?;
    let judging = options
        .policy
        .judging_each(&|member| &instances[member.min(instances.len() - 1)])?;
    let record = options
        .record
        .as_deref()
        .map(|path| open_record(path).map(Mutex::new))
        .transpose()?;
    let shared = Arc::new(Shared {
        compiled,
        limits,
        judging,
        record,
        metrics: Arc::new(Metrics::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(listen(
        shared,
        options.listen,
        &options.certificate,
        &options.key,
    ))
}

fn open_record(path: &Path) -> Result<File, String> {
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

async fn listen(
    shared: Arc<Shared>,
    address: SocketAddr,
    certificate: &Path,
    key: &Path,
) -> Result<(), String> {
    use axum::routing::{get, post};
    crate::tls::install_crypto_provider();
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem_file(certificate, key)
        .await
        .map_err(|e| {
            format!(
                "cannot use the certificate {} with the key {}: {e}",
                certificate.display(),
                key.display()
            )
        })?;
    let app = axum::Router::new()
        .route("/validate/{policy}", post(validate))
        .route("/audit/{policy}", post(validate))
        .route("/readiness", get(|| async { "ready" }))
        .route("/metrics", get(metrics))
        .with_state(shared.clone());
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stopping.shutdown();
    });
    let watcher = handle.clone();
    tokio::spawn(async move {
        if let Some(bound) = watcher.listening().await {
            eprintln!("serve: listening on https://{bound}/validate/<policy> and /audit/<policy>");
        }
    });
    // TCP_NODELAY: an answer goes out at once, not held by Nagle's
    // algorithm until the last one is acknowledged, as Go's client side
    // does too (docs/performance.md, "Under load").
    let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(tls)
        .acceptor(axum_server::accept::NoDelayAcceptor::new());
    axum_server::bind(address)
        .acceptor(Timed {
            inner: acceptor,
            metrics: shared.metrics.clone(),
        })
        .handle(handle)
        .serve(app.into_make_service())
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))
}

async fn validate(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let entered = Instant::now();
    let judged = {
        let shared = shared.clone();
        let body = body.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            shared.metrics.queued.observe(seconds(started - entered));
            let judged = shared.judge(&body);
            shared.metrics.module.observe(seconds(started.elapsed()));
            judged
        })
        .await
    };
    let response = match judged {
        Ok(Ok(review)) => {
            shared.write_down(&body, &review);
            axum::Json(review).into_response()
        }
        Ok(Err(Refusal::BadReview(reason))) => (StatusCode::BAD_REQUEST, reason).into_response(),
        Ok(Err(Refusal::Module(reason))) => {
            shared.write_down(&body, &Value::String(reason.clone()));
            (StatusCode::INTERNAL_SERVER_ERROR, reason).into_response()
        }
        Err(panicked) => (StatusCode::INTERNAL_SERVER_ERROR, panicked.to_string()).into_response(),
    };
    shared.metrics.review.observe(seconds(entered.elapsed()));
    response
}

async fn metrics(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    match shared.metrics.text() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
