//! The shape `docs/design.md` promises for `core/src/` (the policy's code): no import cycle between
//! its top-level modules, no file past `LIMIT` lines of code (the unit tests
//! at its end not counted), and where a criterion or a violation decides,
//! only `match`es that name every variant: no wildcard arm `_ =>` in those
//! files, and nowhere a variant tested by `==`, `!=`, `matches!` or a
//! refutable `let`, so that a new criterion is a compile error at each of
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LIMIT: usize = 600;
/// The files whose `match`es on `Criterion` and `Violation` must name every
/// variant: every file whose code names one of their variants.
const EXHAUSTIVE: [&str; 4] = [
    "criterion.rs",
    "evaluator.rs",
    "existing_violations.rs",
    "message.rs",
];
/// The enums whose variants decide only in exhaustive `match`es.
const DECIDING: [&str; 2] = ["Criterion::", "Violation::"];

/// Each `.rs` file under `dir`, by its path relative to `dir`.
fn sources(dir: &Path, under: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, under, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("UTF-8 source");
            let relative = path.strip_prefix(under).expect("under src").to_path_buf();
            out.insert(relative, text);
        }
    }
}

/// The code of a file before its unit tests.
fn code(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "#[cfg(test)]"
            && text[at + line.len()..]
                .trim_start()
                .starts_with("mod tests")
        {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

/// `code` without its line comments, so that prose never counts as code.
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The variants of `DECIDING` that `code` names (`Criterion::ContainsAnyOf`,
/// not `Criterion::ALL` or `Criterion::from_name`), each with where it
/// starts.
fn variants(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for prefix in DECIDING {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let name: &str = &rest[..rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len())];
            let camel = name.starts_with(|c: char| c.is_ascii_uppercase())
                && name.contains(|c: char| c.is_ascii_lowercase());
            let preceded = code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            if camel && !preceded {
                out.push((at, &code[at..at + prefix.len() + name.len()]));
            }
        }
    }
    out.sort_unstable();
    out
}

/// `before` (the code up to a variant) without the openings of what wraps
/// the variant, `Some(`, `(`, `&` or `[`: `x == Some(Criterion::A)` compares
/// as `x == Criterion::A` does.
fn unwrapped(mut before: &str) -> &str {
    loop {
        let end = before.trim_end();
        let opened = end.strip_suffix('(').map(|rest| {
            rest.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
        });
        match opened
            .or_else(|| end.strip_suffix('&'))
            .or_else(|| end.strip_suffix('['))
        {
            Some(rest) => before = rest,
            None => return end,
        }
    }
}

/// Each variant that `code` tests outside a `match`: compared with `==` or
/// `!=` (on either side, across line breaks as rustfmt writes them), in
/// `matches!`, or as the pattern of `if let`, `while let` or `let … else`.
fn decisions_outside_match(code: &str) -> Vec<String> {
    let code = without_comments(code);
    let mut out = Vec::new();
    for (at, variant) in variants(&code) {
        let before = unwrapped(&code[..at]);
        let after = code[at + variant.len()..].trim_start();
        let compared = ["==", "!="]
            .iter()
            .any(|op| before.ends_with(op) || after.starts_with(op));
        let bound = before
            .strip_suffix("let")
            .is_some_and(|rest| !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_'));
        // Inside `matches!(`: one of the parentheses still open before the
        // variant is the macro's.
        let mut depth = 0usize;
        let mut in_matches = before.ends_with("matches!");
        for (i, c) in before.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' if depth == 0 => in_matches |= before[..i].ends_with("matches!"),
                '(' => depth -= 1,
                _ => {}
            }
        }
        let how = match (compared, bound, in_matches) {
            (true, _, _) => "compared with `==` or `!=`",
            (_, true, _) => "tested by a refutable `let`",
            (_, _, true) => "tested by `matches!`",
            _ => continue,
        };
        out.push(format!("`{variant}` {how}"));
    }
    out
}

/// The top-level module a file belongs to: `json/scan.rs` to `json`.
fn module_of(path: &Path) -> String {
    let first = path.components().next().expect("a path");
    let name = first.as_os_str().to_string_lossy();
    name.strip_suffix(".rs").unwrap_or(&name).to_string()
}

/// The top-level modules `code` names through `crate::`: in paths
/// (`crate::json::Reader`) and in groups (`use crate::{json, message::X}`).
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                // Only the first segment of each item, up to the group's
                // closing brace: nested groups name items of a module
                // already counted.
                let mut depth = 0;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && !c.is_whitespace() => {
                            out.insert(ident(&group[i..]));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                out.insert(ident(rest));
            }
        }
    }
    out.remove("");
    out
}

/// The modules of each cycle of `edges`, found as the strongly connected
/// components of more than one module (Tarjan's algorithm).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'e> {
        edges: &'e BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'e str, usize>,
        low: BTreeMap<&'e str, usize>,
        stack: Vec<&'e str>,
        found: Vec<Vec<String>>,
    }
    impl<'e> Walk<'e> {
        fn visit(&mut self, v: &'e str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every way `core/src/` departs from its shape, one line each.
fn findings(files: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let modules: BTreeSet<String> = files
        .keys()
        .map(|p| module_of(p))
        .filter(|m| m != "lib")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (path, text) in files {
        let code = code(text);
        let me = module_of(path);
        for used in uses(code) {
            if used != me && modules.contains(&used) {
                edges.entry(me.clone()).or_default().insert(used);
            }
        }
        let lines = code.lines().count();
        if lines > LIMIT {
            out.push(format!(
                "{}: {lines} code lines (> {LIMIT})",
                path.display()
            ));
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let listed = EXHAUSTIVE.contains(&name.as_ref());
        if listed && code.lines().any(|l| l.trim_start().starts_with("_ =>")) {
            out.push(format!("{}: a wildcard arm `_ =>`", path.display()));
        }
        if !listed && !variants(&without_comments(code)).is_empty() {
            out.push(format!(
                "{}: names a variant of {} but is not in EXHAUSTIVE",
                path.display(),
                DECIDING.join(" or ")
            ));
        }
        for decision in decisions_outside_match(code) {
            out.push(format!("{}: {decision}", path.display()));
        }
    }
    for cycle in cycles(&edges) {
        out.push(format!("import cycle: {}", cycle.join(" <-> ")));
    }
    out
}

#[test]
fn src_keeps_its_shape() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src");
    let mut files = BTreeMap::new();
    sources(&src, &src, &mut files);
    assert!(files.len() > 10, "core/src/ read: {:?}", files.keys());
    let found = findings(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The checks find what they look for.
#[test]
fn each_departure_is_found() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let long = "let x = 1;\n".repeat(LIMIT + 1);
    let long_tests = format!("fn f() {{}}\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
    let files = BTreeMap::from([
        file("lib.rs", "pub mod a;\npub mod b;\n"),
        file("a.rs", "use crate::{b::Thing, c};\n"),
        file("b.rs", "fn f() { crate::a::g() }\n"),
        file("c.rs", &long),
        file("d.rs", &long_tests),
        file(
            "json/existing_violations.rs",
            "match v {\n    A => 1,\n    _ => 2,\n}\n",
        ),
        file(
            "e.rs",
            "fn f(c: Criterion) -> u8 {\n    match c {\n        Criterion::ContainsAnyOf => 1,\n        _ => 2,\n    }\n}\n",
        ),
        file(
            "f.rs",
            "// Criterion::ContainsAnyOf == c\nlet all = Criterion::ALL.len();\nlet c = Criterion::from_name(n);\n",
        ),
        file(
            "message.rs",
            "fn f(c: Criterion, v: &Violation) -> bool {
    // c == Criterion::DoesNotContainAnyOf, in words only
    if c == Criterion::ContainsAnyOf {
        return true;
    }
    let same = Violation::DoesNotContainAllOf
        != *v;
    if let Some(Criterion::ContainsAllOf) = Some(c) {}
    let Violation::ContainsOtherThan { .. } = v else { return false };
    let made = Some(Violation::ContainsAnyOf);
    matches!(v, Violation::ContainsAllOf { .. })
}
",
        ),
    ]);
    let found = findings(&files);
    assert_eq!(
        found,
        [
            format!("c.rs: {} code lines (> {LIMIT})", LIMIT + 1),
            "e.rs: names a variant of Criterion:: or Violation:: but is not in EXHAUSTIVE"
                .to_string(),
            "json/existing_violations.rs: a wildcard arm `_ =>`".to_string(),
            "message.rs: `Criterion::ContainsAnyOf` compared with `==` or `!=`".to_string(),
            "message.rs: `Violation::DoesNotContainAllOf` compared with `==` or `!=`".to_string(),
            "message.rs: `Criterion::ContainsAllOf` tested by a refutable `let`".to_string(),
            "message.rs: `Violation::ContainsOtherThan` tested by a refutable `let`".to_string(),
            "message.rs: `Violation::ContainsAllOf` tested by `matches!`".to_string(),
            "import cycle: a <-> b".to_string(),
        ]
    );
}

#[test]
fn a_use_names_its_top_level_modules() {
    assert_eq!(
        uses(
            "use crate::{json::{Reader, Token}, message, values::Values};\nlet x = crate::pattern::matches(a);"
        ),
        BTreeSet::from(["json", "message", "pattern", "values"].map(String::from))
    );
}
