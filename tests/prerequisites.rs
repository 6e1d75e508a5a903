//! `make test` on a new machine needs nothing that `scripts/prerequisites`
//! does not install: every program the suite runs (the Makefile's `test`
//! target and what it makes, `e2e.bats` and the scripts it runs, the Rust
//! tests' `Command::new`) is Rust's, the Debian base's, the repository's
//! own, one that prerequisites installs, or one its caller first asks for
//! with `command -v` and does without. Nothing reads a cache: a crate cache
//! offline, a Go module cache, a home directory.
//!
//! The shell is read by a small scanner of our own (`commands`), not a
//! library: the Rust shell parsers parse POSIX or bash, and bats' `@test`
//! blocks are neither; the scanner only has to find the word that starts
//! each simple command, and it refuses the constructs it does not read
//! (backquotes, here-documents) rather than guess.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// What a new machine has before `make test`: Rust by rustup, make, git
/// and python3 (the README's list), and the programs of Debian's essential
/// packages (bash, coreutils, sed, grep, findutils, diffutils, gzip, tar).
const BASE: &[&str] = &[
    "cargo",
    "rustup",
    "rustc",
    "make",
    "git",
    "python3",
    "bash",
    "sh",
    "env",
    "cat",
    "cp",
    "mv",
    "rm",
    "mkdir",
    "rmdir",
    "ln",
    "touch",
    "chmod",
    "ls",
    "basename",
    "dirname",
    "wc",
    "head",
    "tail",
    "tr",
    "cut",
    "sort",
    "uniq",
    "seq",
    "sleep",
    "mktemp",
    "date",
    "id",
    "tee",
    "readlink",
    "realpath",
    "stat",
    "du",
    "nproc",
    "sha256sum",
    "sed",
    "grep",
    "find",
    "xargs",
    "diff",
    "cmp",
    "gzip",
    "tar",
];

/// Shell builtins and keywords, and bats' own functions.
const BUILTINS: &[&str] = &[
    "cd",
    "local",
    "export",
    "return",
    "set",
    "shift",
    "read",
    "kill",
    "wait",
    "break",
    "continue",
    "trap",
    "source",
    ".",
    "exit",
    "declare",
    "unset",
    "eval",
    "type",
    ":",
    "printf",
    "echo",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "command",
    "skip",
    "load",
    "bats_require_minimum_version",
];

/// Words that stand before a command and are not it.
const PREFIXES: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "time", "!", "exec", "run",
];

/// The programs `scripts/prerequisites` installs, from its `PROGRAMS`.
fn installed_by_prerequisites() -> BTreeSet<String> {
    let script = text("scripts/prerequisites");
    let line = script
        .lines()
        .find(|line| line.starts_with("PROGRAMS=("))
        .expect("scripts/prerequisites has its PROGRAMS=(...) line");
    let list = line
        .strip_prefix("PROGRAMS=(")
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("PROGRAMS=(...) on one line");
    list.split_whitespace()
        .map(|entry| {
            let (command, package) = entry.split_once(':').expect("COMMAND:PACKAGE");
            assert!(!package.is_empty(), "{entry}: no Debian package");
            command.to_string()
        })
        .collect()
}

/// Shell text with each quoted string reduced to `Q` and each expansion to
/// `$`, and the code of each command substitution appended as a line of
/// its own.
fn code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut nested = Vec::new();
    let end = unquoted(&chars, 0, &mut out, &mut nested, false);
    assert_eq!(end, chars.len(), "unbalanced `)` in {text:?}");
    for inner in nested {
        out.push('\n');
        out.push_str(&inner);
    }
    out
}

/// Reads code from `i` to the end, or to the `)` that closes a command
/// substitution when `inside`; returns where it stopped.
fn unquoted(
    chars: &[char],
    mut i: usize,
    out: &mut String,
    nested: &mut Vec<String>,
    inside: bool,
) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let at_word_start =
            i == 0 || chars[i - 1].is_whitespace() || ";&|(){}".contains(chars[i - 1]);
        match c {
            '\\' => {
                out.push('Q');
                i = (i + 2).min(chars.len());
                continue;
            }
            '#' if at_word_start => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '`' => panic!("backquotes are not read here: write $( ) instead"),
            '<' if next == Some('<') && chars.get(i + 2) == Some(&'<') => {
                out.push_str("<<<");
                i += 3;
                continue;
            }
            '<' if next == Some('<') => panic!("here-documents are not read here"),
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                out.push('Q');
            }
            '"' => {
                i = quoted(chars, i + 1, nested);
                out.push('Q');
            }
            '$' => {
                i = expansion(chars, i, nested);
                out.push('$');
                continue;
            }
            // `>&2`: a redirection, not a command that runs in the background.
            '>' | '<' if next == Some('&') => {
                out.push(c);
                i += 2;
                continue;
            }
            // `name=(...)`: an array's values, not a subshell.
            '(' if i > 0 && chars[i - 1] == '=' => {
                let mut inner = String::new();
                i = unquoted(chars, i + 1, &mut inner, nested, true);
                out.push('Q');
            }
            '(' => {
                depth += 1;
                out.push(c);
            }
            ')' if inside && depth == 0 => return i,
            ')' => {
                depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    assert!(!inside, "a command substitution is not closed");
    i
}

/// Reads a double-quoted string from `i` (after its `"`) to its closing
/// quote, whose index it returns; command substitutions go to `nested`.
fn quoted(chars: &[char], mut i: usize, nested: &mut Vec<String>) -> usize {
    while i < chars.len() && chars[i] != '"' {
        match chars[i] {
            '\\' => i += 2,
            '$' => i = expansion(chars, i, nested),
            _ => i += 1,
        }
    }
    assert!(i < chars.len(), "a double-quoted string is not closed");
    i
}

/// Reads the expansion at `chars[i] == '$'`; returns the index after it.
/// `$(...)` is code, read into `nested`; `$((...))`, `${...}` and `$NAME`
/// are values.
fn expansion(chars: &[char], i: usize, nested: &mut Vec<String>) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('('), Some('(')) | (Some('{'), _) => {
            let (open, close) = if chars[i + 1] == '{' {
                ('{', '}')
            } else {
                ('(', ')')
            };
            let mut depth = 0;
            let mut j = i + 1;
            while j < chars.len() {
                if chars[j] == open {
                    depth += 1;
                } else if chars[j] == close {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                j += 1;
            }
            panic!("an expansion is not closed")
        }
        (Some('('), _) => {
            let mut inner = String::new();
            let end = unquoted(chars, i + 2, &mut inner, nested, true);
            nested.push(inner);
            end + 1
        }
        _ => i + 1,
    }
}

/// The words that start the simple commands of shell `text`, as they stand
/// (`Q…` for a quoted word, `$…` for an expansion).
fn commands(text: &str) -> Vec<String> {
    let code = without_case_patterns(&code(&text.replace("\\\n", " ")));
    let mut found = Vec::new();
    for command in code.split(['\n', ';', '&', '|', '(', ')', '{', '}']) {
        let mut words = command.split_whitespace().peekable();
        while let Some(word) = words.peek() {
            let assignment = word.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '+')
            });
            if assignment || PREFIXES.contains(word) || word.starts_with('-') {
                words.next();
            } else {
                break;
            }
        }
        let Some(first) = words.next() else { continue };
        // `for`/`case` lists and case patterns, bats' `@test`, redirections.
        if ["for", "case", "in", "esac", "fi", "done", ";;"].contains(&first)
            || first.starts_with('@')
            || first.starts_with(['<', '>'])
            || first.contains(['*', '[', '>'])
        {
            continue;
        }
        found.push(first.to_string());
    }
    found
}

/// `code` with the patterns of its `case` lists (`Linux | Darwin)`) taken
/// off their lines: they name values, not programs.
fn without_case_patterns(code: &str) -> String {
    let mut depth = 0usize;
    let mut lines = Vec::new();
    for line in code.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut line = line;
        if depth > 0
            && let Some((pattern, body)) = line.split_once(')')
            && !pattern.contains(['(', '"', '\'', '$', '='])
        {
            line = body;
        }
        if words.first() == Some(&"case") {
            depth += 1;
        }
        if words.contains(&"esac") {
            depth = depth.saturating_sub(1);
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// The functions a shell file defines (`name() {`).
fn functions(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.trim_start().split_once("()"))
        .map(|(name, _)| name.trim().to_string())
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

/// The programs a shell file asks for with `command -v NAME` before it
/// runs them, and does without.
fn probed(text: &str) -> BTreeSet<String> {
    text.split("command -v ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.trim_matches('"').to_string())
        .collect()
}

/// The recipes of the Makefile's `test` target and of every target it
/// makes, by prerequisite or by `$(MAKE)`, as shell text with the
/// Makefile's variables put in.
fn make_test_recipes() -> Vec<String> {
    let makefile = text("Makefile");
    let mut variables = vec![("MAKE".to_string(), "make".to_string())];
    for line in makefile.lines() {
        for assign in [":=", "?=", "="] {
            if let Some((name, value)) = line.split_once(assign)
                && !name.trim().is_empty()
                && name
                    .trim()
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_')
            {
                variables.push((name.trim().to_string(), value.trim().to_string()));
                break;
            }
        }
    }
    let expand = |line: &str| {
        let mut line = line.replace("$$", "\u{0}");
        // A variable's value may name another: put them in until none is left.
        for _ in 0..variables.len() {
            for (name, value) in &variables {
                line = line.replace(&format!("$({name})"), value);
            }
        }
        assert!(
            !line.contains("$("),
            "a Makefile variable this test does not know: {line}"
        );
        line.replace('\u{0}', "$")
    };
    let mut rules: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for line in makefile.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            if let Some(rule) = rules.last_mut() {
                rule.2.push(recipe.to_string());
            }
        } else if let Some((target, deps)) = line.split_once(':')
            && !target.starts_with('.')
            && !target.contains([' ', '=', '$', '#'])
            && !deps.starts_with('=')
        {
            let deps = deps.split_whitespace().map(str::to_string).collect();
            rules.push((target.to_string(), deps, Vec::new()));
        }
    }
    let mut wanted = vec!["test".to_string()];
    let mut seen = BTreeSet::new();
    let mut recipes = Vec::new();
    while let Some(target) = wanted.pop() {
        if !seen.insert(target.clone()) {
            continue;
        }
        let Some((_, deps, recipe)) = rules.iter().find(|(name, ..)| *name == target) else {
            continue;
        };
        wanted.extend(deps.iter().cloned());
        let mut text = String::new();
        for line in recipe {
            let line = expand(line.trim_start_matches(['@', '-']));
            if let Some(rest) = line.strip_prefix("make ") {
                wanted.extend(
                    rest.split_whitespace()
                        .filter(|w| !w.starts_with('-'))
                        .map(str::to_string),
                );
            }
            text.push_str(&line);
            text.push('\n');
        }
        recipes.push(text);
    }
    assert!(
        seen.contains("policy.wasm") && seen.contains("prerequisites"),
        "{seen:?}"
    );
    recipes
}

/// The shell files the suite runs, beside the Makefile's recipes: the
/// ones the tests name must all be here (`every_script_the_suite_runs_is_read`).
const SCRIPTS: &[&str] = &[
    "scripts/prerequisites",
    "e2e.bats",
    "scripts/action/install",
    "scripts/action/check",
    "scripts/action/test",
    "scripts/action/platform",
    ".ci/check-tag",
];

/// Each program that `text` runs and nothing lets it run.
fn unmet(file: &str, text: &str) -> Vec<String> {
    let installed = installed_by_prerequisites();
    let own = functions(text);
    let optional = probed(text);
    commands(text)
        .into_iter()
        .filter(|word| {
            let repository_path =
                word.contains('/') && root().join(word).exists() || word.starts_with("target/");
            !(word.starts_with(['$', 'Q'])
                || repository_path
                || BASE.contains(&word.as_str())
                || BUILTINS.contains(&word.as_str())
                || installed.contains(word)
                || own.contains(word)
                || optional.contains(word)
                // prerequisites' own installers, used only for what is missing
                || file == "scripts/prerequisites" && ["apt-get", "sudo"].contains(&word.as_str()))
        })
        .map(|word| format!("{file}: {word}"))
        .collect()
}

#[test]
fn make_test_runs_only_what_a_new_machine_has_or_prerequisites_installs() {
    let mut unmet_programs = BTreeSet::new();
    for recipe in make_test_recipes() {
        unmet_programs.extend(unmet("Makefile", &recipe));
    }
    for script in SCRIPTS {
        unmet_programs.extend(unmet(script, &text(script)));
    }
    for file in rust_tests() {
        for program in literal_commands(&text(&file)) {
            if !(BASE.contains(&program.as_str())
                || installed_by_prerequisites().contains(&program))
            {
                unmet_programs.insert(format!("{file}: {program}"));
            }
        }
    }
    assert!(
        unmet_programs.is_empty(),
        "run by make test, but neither on a new machine nor in scripts/prerequisites' PROGRAMS: {unmet_programs:?}"
    );
}

/// The Rust test files, whose `Command::new` start programs.
fn rust_tests() -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["tests", "tests/common", "host/tests"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(
                    path.strip_prefix(root())
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    files.sort();
    files
}

/// The programs that `Command::new` is given as string literals.
fn literal_commands(source: &str) -> Vec<String> {
    source
        .split("Command::new(\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(program, _)| program.to_string()))
        .collect()
}

/// The repository scripts the Rust tests and the bats file run, each
/// read above; a new one that is not in `SCRIPTS` fails here.
#[test]
fn every_script_the_suite_runs_is_read() {
    let mut named = BTreeSet::new();
    for file in rust_tests() {
        for rest in text(&file).split("Command::new(path(\"").skip(1) {
            named.insert(rest.split_once('"').unwrap().0.to_string());
        }
    }
    for command in commands(&text("e2e.bats")) {
        if command.contains('/') && root().join(&command).is_file() {
            named.insert(command);
        }
    }
    assert!(
        named.contains(".ci/check-tag") && named.contains("scripts/action/install"),
        "{named:?}"
    );
    for script in &named {
        assert!(
            SCRIPTS.contains(&script.as_str()),
            "{script} is run by the suite but not read here"
        );
    }
}

/// Nothing the suite runs leans on a cache or a home directory: no crate
/// cache read offline for every platform (`cargo metadata --offline`
/// without `--filter-platform` wants other platforms' crates), no Go
/// module cache, no `~`.
#[test]
fn the_suite_reads_no_cache_and_no_home() {
    let mut files: Vec<String> = SCRIPTS.iter().map(|s| s.to_string()).collect();
    files.push("Makefile".to_string());
    files.extend(
        rust_tests()
            .into_iter()
            .filter(|f| f != "tests/prerequisites.rs"),
    );
    for file in files {
        let source = text(&file);
        for needle in [
            "CARGO_HOME",
            ".cargo/registry",
            "GOMODCACHE",
            "GOPATH",
            "$HOME",
            "~/",
        ] {
            assert!(!source.contains(needle), "{file} reads {needle}");
        }
        for (at, _) in source.match_indices("\"--offline\"") {
            let call = &source[at..source[at..]
                .find(".output()")
                .map_or(source.len(), |end| at + end)];
            assert!(
                call.contains("--filter-platform"),
                "{file}: cargo --offline without --filter-platform needs every platform's crates"
            );
        }
    }
}

#[test]
fn the_scanner_finds_each_command_and_skips_what_is_no_command() {
    let script = r#"
# jq in a comment
setup() { cd "$DIR"; }
run --separate-stderr foo "$(bar -x | baz)" 'qux; quux'
PATH="$(dirname "$runner"):$PATH" run --separate-stderr $entry x
count=$((count + 1)); url=$(sed -n p f) && [ -n "$url" ] || echo "it's; \"done\""
for f in a b; do curl -s "$f" > "${out:-x}"; done
case $v in
  v[0-9]*) ;;
  *) echo no; exit 2 ;;
esac
case $os in
  Linux | Darwin) uname -r ;;
  Windows) os=windows ;;
esac
{ echo a; } >> out
@test "name: a; b" {
  if ! command -v kwctl >/dev/null; then skip "no kwctl's"; fi
  openssl req \
    -x509
}
"#;
    assert_eq!(
        commands(script),
        [
            "setup", "cd", "foo", "$entry", "echo", "curl", "echo", "exit", "uname", "echo",
            "command", "skip", "openssl", "bar", "baz", "dirname", "sed",
        ]
    );
    assert_eq!(functions(script), BTreeSet::from(["setup".to_string()]));
    assert_eq!(probed(script), BTreeSet::from(["kwctl".to_string()]));
    // A program nothing lets the suite run is reported.
    assert_eq!(unmet("x", "yq . f | jq .\nsudo x"), ["x: yq", "x: sudo"]);
    assert_eq!(
        literal_commands(r#"Command::new("make").arg("x"); Command::new(cargo)"#),
        ["make"]
    );
}

#[test]
#[should_panic(expected = "backquotes")]
fn the_scanner_refuses_backquotes() {
    commands("x=`date`");
}

#[test]
#[should_panic(expected = "here-documents")]
fn the_scanner_refuses_here_documents() {
    commands("cat <<EOF\nx\nEOF\n");
}
