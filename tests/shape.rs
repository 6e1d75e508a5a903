//! The shape `docs/design.md` promises for `src/`: no import cycle between
//! its top-level modules, no file past `LIMIT` lines of code (the unit tests
//! at its end not counted), and no wildcard arm `_ =>` in the files where a
//! criterion or a violation decides, so that a new criterion is a compile
//! error at each of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LIMIT: usize = 600;
/// The files whose `match`es on `Criterion` and `Violation` must name every
/// variant.
const EXHAUSTIVE: [&str; 3] = ["criterion.rs", "evaluator.rs", "existing_violations.rs"];

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

/// Every way `src/` departs from its shape, one line each.
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
        if EXHAUSTIVE.contains(&name.as_ref())
            && code.lines().any(|l| l.trim_start().starts_with("_ =>"))
        {
            out.push(format!("{}: a wildcard arm `_ =>`", path.display()));
        }
    }
    for cycle in cycles(&edges) {
        out.push(format!("import cycle: {}", cycle.join(" <-> ")));
    }
    out
}

#[test]
fn src_keeps_its_shape() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&src, &src, &mut files);
    assert!(files.len() > 10, "src/ read: {:?}", files.keys());
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
    ]);
    let found = findings(&files);
    assert_eq!(
        found,
        [
            format!("c.rs: {} code lines (> {LIMIT})", LIMIT + 1),
            "json/existing_violations.rs: a wildcard arm `_ =>`".to_string(),
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
