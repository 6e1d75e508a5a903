//! kwctl's session files: what a policy asked of its host and what it got,
//! in order (`kwctl run --record-host-capabilities-interactions FILE`),
//! replayed later without a cluster or a registry
//! (`--replay-host-capabilities-interactions FILE`), as kwctl 1.35 does it
//! (`callback_handler/proxy.rs`): a YAML list of exchanges, each with the
//! request as YAML text and the answer or the error; a replay answers the
//! calls in the recorded order and refuses a call that is not the next one
//! recorded.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Host, Request};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Answer {
    Success { payload: String },
    Error { message: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
struct Exchange {
    request: String,
    response: Answer,
}

/// A recorded session, answering calls in the order they were recorded.
#[derive(Debug)]
pub struct Replay {
    source: PathBuf,
    left: Mutex<VecDeque<(Request, Answer)>>,
}

impl Replay {
    /// Reads a session file; `Err` names the file and the exchange that
    /// cannot be read (kwctl panics there).
    pub fn read(path: &Path) -> Result<Replay, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the session {}: {e}", path.display()))?;
        Replay::from_text(path, &text)
    }

    fn from_text(path: &Path, text: &str) -> Result<Replay, String> {
        let exchanges: Vec<Exchange> = yaml_serde::from_str(text).map_err(|e| {
            format!(
                "{}: not a kwctl session file (a list of exchanges, each with `type: Exchange`, `request` and `response`): {e}",
                path.display()
            )
        })?;
        let mut left = VecDeque::with_capacity(exchanges.len());
        for (index, exchange) in exchanges.into_iter().enumerate() {
            let request: Request = yaml_serde::from_str(&exchange.request).map_err(|e| {
                format!(
                    "{}: exchange {}: its request is none this runner knows: {e}",
                    path.display(),
                    index + 1
                )
            })?;
            left.push_back((request, exchange.response));
        }
        Ok(Replay {
            source: path.to_path_buf(),
            left: Mutex::new(left),
        })
    }

    /// What is left unasked when the run ends, as kwctl warns of it.
    pub fn leftovers(&self) -> Option<String> {
        let left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        (!left.is_empty()).then(|| {
            let asked: Vec<&str> = left
                .iter()
                .map(|(request, _)| request.capability())
                .collect();
            format!(
                "{}: {} recorded exchange(s) were not replayed: {}",
                self.source.display(),
                left.len(),
                asked.join(", ")
            )
        })
    }
}

impl Host for Replay {
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
        let mut left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        match left.pop_front() {
            None => Err("the list of recorded responses is empty".to_string()),
            Some((expected, answer)) if expected == *request => match answer {
                Answer::Success { payload } => Ok(payload.into_bytes()),
                Answer::Error { message } => Err(message),
            },
            Some((expected, _)) => Err(format!(
                "Replay error: unexpected request. Was expecting {expected:?}, got {request:?} instead"
            )),
        }
    }
}

/// Records what another host answers, for a session file.
pub struct Record {
    inner: Box<dyn Host>,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Record {
    pub fn new(inner: Box<dyn Host>) -> Record {
        Record {
            inner,
            exchanges: Mutex::new(Vec::new()),
        }
    }

    /// The session as kwctl writes it.
    pub fn session(&self) -> String {
        let exchanges = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        yaml_serde::to_string(&*exchanges).expect("exchanges are strings")
    }

    pub fn write(&self, path: &Path) -> Result<(), String> {
        std::fs::write(path, self.session())
            .map_err(|e| format!("cannot write the session {}: {e}", path.display()))
    }
}

impl Host for Record {
    fn answer(&self, request: &Request) -> Result<Vec<u8>, String> {
        let answer = self.inner.answer(request);
        let response = match &answer {
            Ok(payload) => match String::from_utf8(payload.clone()) {
                Ok(payload) => Answer::Success { payload },
                Err(e) => {
                    return Err(format!(
                        "cannot record an answer that is not UTF-8 text: {e}"
                    ));
                }
            },
            Err(message) => Answer::Error {
                message: message.clone(),
            },
        };
        let exchange = Exchange {
            request: yaml_serde::to_string(request).expect("requests serialize"),
            response,
        };
        self.exchanges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(exchange);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::Unanswered;

    /// A session as kwctl 1.35 writes one (`serde_yaml` of its exchanges).
    const KWCTL: &str = r#"- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Namespace
    name: team-a
    namespace: null
    disable_cache: false
    field_masks: null
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'
- type: Exchange
  request: |
    !OciManifestDigest
    image: ghcr.io/kubewarden/policies/pod-privileged:v0.1.9
  response:
    type: Error
    message: 'manifest unknown'
"#;

    fn get(name: &str) -> Request {
        Request::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: name.into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        }
    }

    #[test]
    fn a_session_replays_in_order_and_refuses_another_call() {
        let replay = Replay::from_text(Path::new("s.yml"), KWCTL).unwrap();
        assert_eq!(
            replay.answer(&get("team-a")),
            Ok(br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}"#.to_vec())
        );
        assert!(
            replay
                .leftovers()
                .unwrap()
                .contains("oci/v1/manifest_digest")
        );
        let digest = Request::OciManifestDigest {
            image: "ghcr.io/kubewarden/policies/pod-privileged:v0.1.9".into(),
        };
        assert_eq!(replay.answer(&digest), Err("manifest unknown".to_string()));
        assert_eq!(replay.leftovers(), None);
        assert_eq!(
            replay.answer(&digest),
            Err("the list of recorded responses is empty".to_string())
        );
        let again = Replay::from_text(Path::new("s.yml"), KWCTL).unwrap();
        let error = again.answer(&get("team-b")).unwrap_err();
        assert!(
            error.starts_with("Replay error: unexpected request."),
            "{error}"
        );
    }

    #[test]
    fn a_recorded_session_replays() {
        let record = Record::new(Box::new(Unanswered));
        assert!(record.answer(&get("x")).is_err());
        let replay = Replay::from_text(Path::new("r.yml"), &record.session()).unwrap();
        assert_eq!(
            replay.answer(&get("x")),
            Err(crate::capabilities::unanswered(&get("x")))
        );
    }

    #[test]
    fn what_is_no_session_says_so() {
        for text in [
            "{}",
            "- request: 1",
            "- type: Exchange\n  request: '!Nope {}'\n  response: {type: Success, payload: ''}",
        ] {
            let error = Replay::from_text(Path::new("bad.yml"), text).unwrap_err();
            assert!(error.starts_with("bad.yml: "), "{error}");
        }
    }
}
