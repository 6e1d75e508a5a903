//! What a guest answered, or why it gave no usable answer: the verdicts
//! of `validate_settings` and `validate`, the errors a call ends with (a
//! trap, an answer out of protocol, the deadline, the memory cap), each in
//! one line, and the answer policy-server gives in place of a verdict when
//! a policy fails (`Answer`).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::limits;
use crate::response::AdmissionResponse;
/// Why a call into the guest did not give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// The module could not be compiled or instantiated.
    Load(String),
    /// The guest trapped (unreachable, out of bounds, stack overflow, ...).
    Trap(String),
    /// The guest returned an error, or a WASI program failed.
    Guest(String),
    /// The guest answered, but not with the JSON the protocol expects.
    BadAnswer { operation: String, reason: String },
    /// The call ran past its deadline and was interrupted.
    Timeout {
        limit: Duration,
        /// What a WASI program had written to its standard error by then:
        /// policy-server's answer for it.
        stderr: String,
    },
    /// The instance asked for more memory (or table) than its cap.
    Memory { limit: Option<usize> },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Load(m) => write!(f, "cannot load the module: {}", one_line(m)),
            HostError::Trap(m) => write!(f, "the guest trapped: {}", trap_line(m)),
            HostError::Guest(m) => write!(f, "the guest returned an error: {}", one_line(m)),
            HostError::BadAnswer { operation, reason } => {
                write!(
                    f,
                    "the guest's answer to `{operation}` is malformed: {reason}"
                )
            }
            HostError::Timeout { limit, .. } => write!(
                f,
                "interrupted at the deadline of {}: the evaluation took too long",
                limits::seconds(*limit)
            ),
            HostError::Memory { limit: Some(limit) } => write!(
                f,
                "the guest needed more than its {} MiB of memory",
                limit >> 20
            ),
            HostError::Memory { limit: None } => {
                write!(f, "the guest needed more memory than it may have")
            }
        }
    }
}

impl std::error::Error for HostError {}

/// A message in one line: its first, and how many more it had (a WASI
/// program's panic with its goroutines, say).
fn one_line(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().to_string();
    match lines.count() {
        0 => first,
        more => format!("{first} (and {more} more lines)"),
    }
}

/// A trap in one line: wasmtime's reason (`wasm trap: …`), without the
/// backtrace it comes with; where the reason is lost (wasmtime-provider
/// keeps only the backtrace of a waPC guest's trap), the function it
/// trapped in.
fn trap_line(message: &str) -> String {
    let lines = message.lines().map(str::trim);
    if let Some(reason) = lines.clone().find(|l| l.starts_with("wasm trap:")) {
        return reason.to_string();
    }
    let frames: Vec<&str> = lines
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .collect();
    match frames
        .first()
        .and_then(|frame| frame.rsplit_once(" - ").or(frame.split_once(": ")))
    {
        Some((_, function)) => format!(
            "in {} ({} frames of its backtrace shown; wasmtime gives no reason)",
            function.trim().trim_start_matches("<unknown>!"),
            frames.len()
        ),
        None => one_line(message),
    }
}

/// The guest's answer to `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SettingsVerdict {
    pub valid: bool,
    pub message: Option<String>,
}

/// The guest's answer to `validate` (Kubewarden's ValidationResponse), or
/// what a Rego policy's answer says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ValidationVerdict {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
    /// A JSONPatch (base64) the policy made itself: an `opa` policy answers
    /// with a whole AdmissionResponse.
    #[serde(skip)]
    pub patch: Option<String>,
}

impl ValidationVerdict {
    pub fn accepted() -> ValidationVerdict {
        ValidationVerdict {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
            patch: None,
        }
    }

    pub fn rejected(message: String, code: Option<u16>) -> ValidationVerdict {
        ValidationVerdict {
            accepted: false,
            message: Some(message),
            code,
            ..ValidationVerdict::accepted()
        }
    }
}

/// policy-server's answer to a waPC policy interrupted at its deadline
/// (policy-evaluator 1.35, `runtimes/wapc/runtime.rs`).
pub const WAPC_TIMEOUT: &str =
    "Policy execution interrupted because it exceeded the allowed execution time";

/// burrego's error for a Rego policy interrupted at its deadline, which
/// policy-server answers as an internal server error.
pub const REGO_TIMEOUT: &str = "guest code interrupted, execution deadline exceeded";

/// A policy's verdict as policy-server takes it, and, where the policy
/// failed to give one, why: policy-server then answers with a rejection
/// of code 500 in its own words, which `verdict` is.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub verdict: ValidationVerdict,
    pub failure: Option<HostError>,
}

impl Answer {
    pub(crate) fn given(verdict: ValidationVerdict) -> Answer {
        Answer {
            verdict,
            failure: None,
        }
    }

    pub(crate) fn failed(message: String, failure: HostError) -> Answer {
        Answer {
            verdict: ValidationVerdict::rejected(message, Some(500)),
            failure: Some(failure),
        }
    }

    /// policy-evaluator's `reject_internal_server_error`.
    pub(crate) fn internal(message: &str, failure: HostError) -> Answer {
        Answer::failed(format!("internal server error: {message}"), failure)
    }

    /// The AdmissionResponse policy-server sends for it; `request` is
    /// what was judged, whose object a mutation is compared with.
    pub fn response(&self, request: &[u8], raw: bool) -> AdmissionResponse {
        let object = match self.verdict.mutated_object.is_some() {
            true => object(request, raw),
            false => None,
        };
        AdmissionResponse::from_verdict(&uid(request), object.as_ref(), &self.verdict)
    }
}

/// The most of an answer the runner reads: far more than any verdict
/// needs, and a bound on what a message or a report carries.
pub const MAX_ANSWER: usize = 16 << 20;

/// A guest's JSON answer to `operation`, or why it is none: serde's error
/// (what policy-server says) and the failure, which also names an answer
/// too large to read ([`MAX_ANSWER`]).
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
    answer: &[u8],
    operation: &str,
) -> Result<T, (String, HostError)> {
    let bad = |reason: String| HostError::BadAnswer {
        operation: operation.to_string(),
        reason,
    };
    if answer.len() > MAX_ANSWER {
        let reason = format!(
            "{} MiB, more than the {} MiB an answer may be",
            answer.len() >> 20,
            MAX_ANSWER >> 20
        );
        return Err((reason.clone(), bad(reason)));
    }
    serde_json::from_slice(answer)
        .map_err(|e| (e.to_string(), bad(format!("{e}: {}", abridged(answer)))))
}

/// The start of an answer, for a message: at most 200 characters.
fn abridged(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(&answer[..answer.len().min(800)]);
    let mut shown: String = text.chars().take(200).collect();
    if shown.len() < answer.len() {
        shown.push_str(&format!(" … ({} bytes in all)", answer.len()));
    }
    shown
}

/// A request's `uid` (a raw request's, if it has one).
pub(crate) fn uid(request: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Uid {
        #[serde(default)]
        uid: Option<Value>,
    }
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    match Uid::deserialize(&mut de) {
        Ok(Uid {
            uid: Some(Value::String(uid)),
        }) => uid,
        _ => String::new(),
    }
}

/// What the request asks to write, which a mutation is compared with: its
/// `object`, or a raw request whole; `None` when it writes nothing.
pub(crate) fn object(request: &[u8], raw: bool) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(request);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de).ok()?;
    match raw {
        true => Some(value),
        false => match value {
            Value::Object(mut request) => match request.remove("object") {
                Some(Value::Null) | None => None,
                object => object,
            },
            _ => None,
        },
    }
}
