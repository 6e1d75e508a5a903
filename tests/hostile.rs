//! Hostile inputs and resource use, through the compiled module: every case
//! gets a verdict or a clear rejection, never a trap, and memory stays
//! bounded. Timings are printed (`--nocapture`) for the record, not asserted.

mod common;

use std::time::Instant;

use common::{compiled, policy, settings};
use policy_evaluator::{HostError, Policy, ValidationVerdict, validate_payload};

const PAGE: usize = 64 * 1024;

fn pod(spec: &str, annotations: &str) -> String {
    format!(
        r#"{{"uid":"h","operation":"CREATE","object":{{"kind":"Pod","spec":{spec},"metadata":{{"name":"p","annotations":{annotations}}}}}}}"#
    )
}

fn many_annotations(count: usize) -> String {
    let members: Vec<String> = (0..count)
        .map(|i| format!(r#""k{i}.example.com/x":"v""#))
        .collect();
    format!(r#"{{"a":"1",{}}}"#, members.join(","))
}

/// `text` with its one `@` replaced by raw bytes.
fn splice(text: &str, bytes: &[u8]) -> Vec<u8> {
    let (before, after) = text.split_once('@').expect("a marker");
    [before.as_bytes(), bytes, after.as_bytes()].concat()
}

enum Expect {
    Accepted,
    Rejected(&'static str),
}

struct Case {
    name: &'static str,
    payload: Vec<u8>,
    expect: Expect,
}

fn cases() -> Vec<Case> {
    let any_a = settings("containsAnyOf", &["a"]);
    let only_a = settings("doesNotContainOtherThan", &["a"]);
    let case = |name, request: String, settings: &str, expect| Case {
        name,
        payload: validate_payload(request.as_bytes(), settings.as_bytes()),
        expect,
    };
    let case_bytes = |name, request: Vec<u8>, settings: &str, expect| Case {
        name,
        payload: validate_payload(&request, settings.as_bytes()),
        expect,
    };
    let deep = |depth: usize| format!("{}0{}", "[{\"x\":".repeat(depth), "}]".repeat(depth));
    vec![
        case(
            "3 MiB object",
            pod(
                &format!(r#"{{"blob":"{}"}}"#, "x".repeat(3 << 20)),
                r#"{"a":"1"}"#,
            ),
            &any_a,
            Expect::Accepted,
        ),
        case(
            "20,000 annotations",
            pod("{}", &many_annotations(20_000)),
            &any_a,
            Expect::Accepted,
        ),
        case(
            "20,000 annotations outside an allowlist",
            pod("{}", &many_annotations(20_000)),
            &only_a,
            Expect::Rejected("remove \"k0.example.com/x\", \"k1.example.com/x\""),
        ),
        // The matcher's middle loop at its hardest (`pattern.rs` counts the
        // work of both): many pieces, the last never found, and one long
        // piece that nearly matches everywhere.
        case(
            "*a*a*a*a*a*b* against a 100 KiB key of a's",
            pod("{}", &format!(r#"{{"{}":"v"}}"#, "a".repeat(100 << 10))),
            &settings("containsAnyOf", &["*a*a*a*a*a*b*"]),
            Expect::Rejected("must carry at least one of the annotations \"*a*a*a*a*a*b*\""),
        ),
        case(
            "x*a{58}b*y against x, 100 KiB of a's, y",
            pod("{}", &format!(r#"{{"x{}y":"v"}}"#, "a".repeat(100 << 10))),
            &settings("containsAnyOf", &[&format!("x*{}b*y", "a".repeat(58))]),
            Expect::Rejected("must carry at least one of the annotations \"x*aaaa"),
        ),
        case(
            "20,000 annotations against 4 patterns",
            pod("{}", &many_annotations(20_000)),
            &settings(
                "doesNotContainOtherThan",
                &[
                    "a",
                    "k1*.example.com/x",
                    "k2*.example.com/*",
                    "*1.example.com/x",
                    "k*5.*",
                ],
            ),
            Expect::Rejected("… and 6,203 more"),
        ),
        case(
            "100 KiB annotation key",
            pod("{}", &format!(r#"{{"{}":"v"}}"#, "k".repeat(100 << 10))),
            &only_a,
            Expect::Rejected("outside the allowed list"),
        ),
        case(
            "100 KiB annotation key of escapes",
            pod(
                "{}",
                &format!(r#"{{"{}":"v"}}"#, "\\u006b".repeat(100 << 10)),
            ),
            &any_a,
            Expect::Rejected("must carry at least one of the annotations"),
        ),
        case(
            "metadata repeated",
            r#"{"object":{"metadata":{},"metadata":{"annotations":{"a":"1"}}}}"#.to_string(),
            &any_a,
            Expect::Rejected("duplicate field `metadata`"),
        ),
        case(
            "spec nested 10,000 deep",
            pod(&deep(10_000), r#"{"a":"1"}"#),
            &any_a,
            Expect::Accepted,
        ),
        case(
            "annotation value nested 10,000 deep",
            pod("{}", &format!(r#"{{"a":{}}}"#, deep(10_000))),
            &any_a,
            Expect::Accepted,
        ),
        case(
            "10,000 unclosed brackets",
            pod(&"[".repeat(10_000), "{}"),
            &any_a,
            Expect::Rejected("malformed request"),
        ),
        case(
            "numbers at the limits",
            pod(
                &format!(
                    "[1e999999999,-0.0e-0,{},-{}.{}E+99]",
                    "9".repeat(10_000),
                    "1".repeat(500),
                    "0".repeat(500)
                ),
                r#"{"a":1.7976931348623157e309}"#,
            ),
            &any_a,
            Expect::Accepted,
        ),
        case(
            "1 MiB string of escapes",
            pod(
                &format!(r#""{}""#, "\\u00e9\\n\\\"".repeat(100_000)),
                r#"{"a":"1"}"#,
            ),
            &any_a,
            Expect::Accepted,
        ),
        // serde_json does not check skipped strings for UTF-8; neither do we.
        case_bytes(
            "invalid UTF-8 in a skipped value",
            splice(&pod("{}", r#"{"a":"@"}"#), b"\xff\xfe"),
            &any_a,
            Expect::Accepted,
        ),
        case_bytes(
            "invalid UTF-8 in a key",
            splice(&pod("{}", r#"{"@":"v"}"#), b"\xc3\x28"),
            &any_a,
            Expect::Rejected("invalid UTF-8"),
        ),
    ]
}

fn run(policy: &Policy, payload: &[u8]) -> Result<ValidationVerdict, HostError> {
    policy.validate_payload(payload)
}

#[test]
fn hostile_inputs_get_a_verdict_never_a_trap() {
    let policy = policy();
    let mut slowest = (0.0, "");
    for case in cases() {
        let start = Instant::now();
        let verdict = run(&policy, &case.payload).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let took = start.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "{:<45} {:>9} bytes {:>9.3} ms",
            case.name,
            case.payload.len(),
            took
        );
        if took > slowest.0 {
            slowest = (took, case.name);
        }
        let message = verdict.message.clone().unwrap_or_default();
        match case.expect {
            Expect::Accepted => assert!(verdict.accepted, "{}: {message}", case.name),
            Expect::Rejected(fragment) => {
                assert!(!verdict.accepted, "{}", case.name);
                assert!(
                    message.len() < policy_core::message::MAX_MESSAGE,
                    "{}: a message of {} bytes",
                    case.name,
                    message.len()
                );
                assert!(
                    message.contains(fragment),
                    "{}: {:.300}",
                    case.name,
                    message
                );
            }
        }
    }
    eprintln!("slowest: {} at {:.3} ms", slowest.1, slowest.0);
}

/// The fewest 64 KiB pages of linear memory with which `works` succeeds.
fn fewest_pages(works: impl Fn(&Policy) -> bool) -> usize {
    let fits = |pages: usize| {
        compiled()
            .instantiate_limited(pages * PAGE)
            .is_ok_and(|policy| works(&policy))
    };
    let (mut low, mut high) = (1, 4096);
    assert!(fits(high), "does not work even with 256 MiB");
    while low < high {
        let mid = (low + high) / 2;
        if fits(mid) { high = mid } else { low = mid + 1 }
    }
    low
}

#[test]
fn memory_stays_flat_over_100_000_calls() {
    let accepted = validate_payload(
        common::read_test_data("ingress.json").as_bytes(),
        settings("containsAllOf", &["owner", "cost-center"]).as_bytes(),
    );
    let rejected = validate_payload(
        common::read_test_data("ingress.json").as_bytes(),
        settings("doesNotContainOtherThan", &["owner"]).as_bytes(),
    );
    let calls = |policy: &Policy, n: usize| {
        (0..n).all(|i| {
            let payload = if i % 2 == 0 { &accepted } else { &rejected };
            run(policy, payload).is_ok_and(|v| v.accepted == (i % 2 == 0))
        })
    };
    let warm = fewest_pages(|policy| calls(policy, 1_000));
    // With no more memory than 1,000 calls needed, 100,000 calls still run:
    // nothing accumulates between calls.
    let policy = compiled().instantiate_limited(warm * PAGE).unwrap();
    assert!(
        calls(&policy, 100_000),
        "100,000 calls needed more than {warm} pages"
    );
    let initial = fewest_pages(|_| true);
    eprintln!(
        "linear memory: {initial} pages at start, {warm} pages bound 1,000 and 100,000 calls"
    );
}

#[test]
fn memory_beyond_the_request_is_a_few_mib() {
    let initial = fewest_pages(|_| true);
    for case in cases() {
        let pages = fewest_pages(|policy| run(policy, &case.payload).is_ok());
        let beyond = (pages - initial) * PAGE;
        eprintln!(
            "{:<45} payload {:>9} B, memory grown by {:>9} B ({:.2} x payload)",
            case.name,
            case.payload.len(),
            beyond,
            beyond as f64 / case.payload.len() as f64
        );
        assert!(
            beyond <= case.payload.len() + (4 << 20),
            "{} grew memory by {beyond} bytes for a {} byte payload",
            case.name,
            case.payload.len()
        );
    }
}
