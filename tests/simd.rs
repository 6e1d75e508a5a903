//! The SIMD code against its plain twin. The compiled module finds the tokens
//! of a payload with WebAssembly SIMD (`json::scan`'s `mod simd`); the native
//! build, which the unit and property tests exercise, with a plain loop over
//! the same masks (`mod plain`). All the rest is the same code, so the
//! module must answer every payload exactly as `decide` does natively:
//! requests with long strings, runs of backslashes, white space and damage
//! that fall at every offset of a 64-byte block. The SIMD sits in two
//! places, `json::scan` (the token masks) and `json::grammar::ascii_run`
//! (the first 16 bytes of a string that is read); the module must hold the
//! instructions they are written with, or this comparison would hold the
//! plain code to itself.

mod common;
// Its `damaged` only: the module's own tests use the rest.
#[allow(dead_code)]
#[path = "../core/src/test_support.rs"]
mod test_support;

use policy_core::decide;
use policy_evaluator::validate_payload;
use proptest::prelude::*;
use test_support::damaged;

/// A string's JSON text, heavy in what the masks must get right.
fn string() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "owner",
        "example.com/app",
        r"\\",
        r#"\""#,
        r"\\\\",
        r"\u00e9",
        r"\n",
        "é",
        " ",
        "{}[],:",
        "a long run of plain text that crosses a block",
    ]);
    prop::collection::vec(piece, 0..8).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        string(),
        prop::sample::select(vec!["0", "-12", "3.5e2", "true", "false", "null"])
            .prop_map(str::to_string),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5)
                .prop_map(|items| format!("[{}]", items.join(" ,"))),
            prop::collection::vec((string(), inner), 0..5).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                format!("{{ {} }}", members.join(","))
            }),
        ]
    })
}

/// A `validate` payload: the annotations to judge, a spec of any shape
/// before them, and padding that moves everything along the blocks.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    let annotations = prop::collection::vec((string(), string()), 0..4);
    (0usize..64, value(), annotations, any::<bool>()).prop_map(
        |(padding, spec, annotations, required)| {
            let annotations: Vec<String> = annotations
                .into_iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect();
            let request = format!(
                r#"{{"uid":"{}","operation":"CREATE","object":{{"kind":"Pod","spec":{spec},"metadata":{{"name":"p","annotations":{{{}}}}}}}}}"#,
                "x".repeat(padding),
                annotations.join(",")
            );
            let criteria = if required { "containsAnyOf" } else { "doesNotContainAnyOf" };
            let settings = format!(r#"{{"criteria":"{criteria}","values":["owner"]}}"#);
            validate_payload(request.as_bytes(), settings.as_bytes())
        },
    )
}

fn answers_as_natively(payload: &[u8]) -> Result<(), TestCaseError> {
    let policy = common::policy();
    let module = policy
        .validate_payload(payload)
        .unwrap_or_else(|e| panic!("{e}"));
    let native = decide(payload);
    prop_assert_eq!(
        (module.accepted, module.message),
        (native.is_ok(), native.err()),
        "{}",
        String::from_utf8_lossy(payload)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn the_module_answers_generated_payloads_as_native_code_does(payload in payload()) {
        answers_as_natively(&payload)?;
    }

    #[test]
    fn the_module_answers_damaged_payloads_as_native_code_does(
        payload in payload().prop_flat_map(|p| damaged(p, b"{}[]\",:\\ \n\x01tu0."))
    ) {
        answers_as_natively(&payload)?;
    }
}

/// The SIMD instructions of each site, each found together in one function
/// body of the built module (where the site's code was compiled, inlined or
/// not): without `target-feature=+simd128` (`.cargo/config.toml`), or with
/// a site's SIMD lost to a change of its `cfg`, the plain twin would be
/// compiled in instead, and the tests above would compare it with itself.
#[test]
fn the_module_holds_the_simd_code() {
    use std::collections::BTreeSet;
    use wasmparser::{Operator, Parser, Payload};

    // Each site's instructions as LLVM compiles them (it may fuse or
    // replace a written intrinsic: ascii_run's `sub` then `ge_u` becomes one
    // signed `lt_s`); a compiler that selects others fails this test, and
    // the message lists what each body holds.
    /// `json::scan`'s block masks: table lookups by swizzle on each nibble.
    const SCAN_BLOCK: [&str; 6] = [
        "i8x16.bitmask",
        "i8x16.eq",
        "i8x16.shr_u",
        "i8x16.swizzle",
        "v128.and",
        "v128.load",
    ];
    /// `json::scan`'s test for a block without rare bytes: a saturating
    /// subtraction for control characters, `any_true` over the lanes.
    const SCAN_RARE: [&str; 5] = [
        "i8x16.eq",
        "i8x16.sub_sat_u",
        "v128.any_true",
        "v128.load",
        "v128.or",
    ];
    /// `json::grammar::ascii_run`: control characters and bytes above 0x7f
    /// in one signed compare.
    const ASCII_RUN: [&str; 5] = [
        "i8x16.bitmask",
        "i8x16.eq",
        "i8x16.lt_s",
        "v128.load",
        "v128.or",
    ];

    let bytes = std::fs::read(common::module_path()).expect("policy.wasm");
    let mut bodies: Vec<BTreeSet<&str>> = Vec::new();
    for payload in Parser::new(0).parse_all(&bytes) {
        let Payload::CodeSectionEntry(body) = payload.expect("a valid module") else {
            continue;
        };
        let mut seen = BTreeSet::new();
        let mut operators = body.get_operators_reader().expect("a function body");
        while !operators.eof() {
            let name = match operators.read().expect("an operator") {
                Operator::V128Load { .. } => "v128.load",
                Operator::V128Or => "v128.or",
                Operator::V128AnyTrue => "v128.any_true",
                Operator::I8x16Eq => "i8x16.eq",
                Operator::I8x16Bitmask => "i8x16.bitmask",
                Operator::I8x16Swizzle => "i8x16.swizzle",
                Operator::I8x16SubSatU => "i8x16.sub_sat_u",
                Operator::I8x16ShrU => "i8x16.shr_u",
                Operator::I8x16LtS => "i8x16.lt_s",
                Operator::V128And => "v128.and",
                _ => continue,
            };
            seen.insert(name);
        }
        bodies.push(seen);
    }
    let sites: [(&str, &[&str]); 3] = [
        ("json::scan (blocks)", &SCAN_BLOCK),
        ("json::scan (rare bytes)", &SCAN_RARE),
        ("json::grammar::ascii_run", &ASCII_RUN),
    ];
    for (site, operators) in sites {
        let site_ops: BTreeSet<&str> = operators.iter().copied().collect();
        assert!(
            bodies.iter().any(|body| body.is_superset(&site_ops)),
            "no function body holds {site}'s SIMD code {site_ops:?}; bodies with SIMD: {:?}",
            bodies.iter().filter(|b| !b.is_empty()).collect::<Vec<_>>()
        );
    }
}
