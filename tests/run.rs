//! `policy-runner run` as docs/run.md shows it: the page's example is run,
//! on the evaluator's own test policy, and must print the line the page
//! shows.

#[path = "../evaluator/tests/common/mod.rs"]
mod policies;

use std::path::Path;

use policy_host::run::Command;

#[test]
fn the_run_page_shows_what_run_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/run.md")).unwrap();
    let command = "$ policy-runner run target/test-policies/wapc.wasm -r test_data/modes/pod-open.json \\\n    --settings-json '{\"annotation\":\"example.com/checked\"}'\n";
    let start = page.find(command).expect("the example of docs/run.md") + command.len();
    let shown = &page[start..start + page[start..].find("```").unwrap()];
    let ran = Command {
        target: policies::module("wapc"),
        request: std::fs::read_to_string(root.join("test_data/modes/pod-open.json")).unwrap(),
        settings: Some(serde_json::json!({"annotation": "example.com/checked"})),
        execution_mode: None,
        raw: false,
        allow_context_aware: false,
        session: None,
        allowed_host_capabilities: vec!["*".to_string()],
        cluster_objects: Vec::new(),
        live_cluster: false,
        limits: Default::default(),
    }
    .run()
    .unwrap();
    assert_eq!(shown, format!("{}\n", ran.lines.join("\n")));
    // kwctl's warning that the policy may look up nothing here.
    assert!(
        ran.said
            .iter()
            .any(|said| said.contains("--allow-context-aware")),
        "{:?}",
        ran.said
    );
}
