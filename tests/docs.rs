//! Every link of every Markdown file of the repository leads somewhere: a
//! relative link to a file or directory that exists, an `#anchor` to a
//! heading of the Markdown file it names, as GitHub makes anchors. The
//! README is also shown outside the repository, by Artifact Hub
//! (`kwctl annotate -u README.md` embeds it in the module), where a relative
//! link leads nowhere: its links to the repository's files are absolute, and
//! are checked as the files they name.
//!
//! And the figures the docs state agree with their sources: the module's
//! size in the README, the peers' versions that `scripts/peers` pins, the
//! differences from a live API server that the cluster tests name.
//!
//! The Markdown is read by pulldown-cmark, so that code is no link.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path};

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};
use regex::Regex;

/// The repository's root, as `tests/common` finds it (this test needs none
/// of the module that `common` builds).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Directories that hold no Markdown of the repository's own, wherever they
/// are: what Git, Cargo and npm keep.
const SKIPPED_NAMES: [&str; 3] = [".git", "target", "node_modules"];

/// The repository's address, as `metadata.yml` gives it to kwctl and
/// Artifact Hub (`https://github.com/OWNER/REPO`).
fn repository() -> String {
    let metadata = std::fs::read_to_string(root().join("metadata.yml")).unwrap();
    metadata
        .lines()
        .find_map(|line| line.trim().strip_prefix("io.kubewarden.policy.source:"))
        .expect("metadata.yml names the source")
        .trim()
        .trim_end_matches('/')
        .to_string()
}

/// The paths (relative, with `/`) that `.gitignore` names: built or
/// generated, such as `fuzz/corpus`.
fn ignored(root: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(root.join(".gitignore")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .map(|line| line.trim_matches('/').to_string())
        .collect()
}

/// Every Markdown file under `root`, by its relative path (with `/`).
fn markdown_files(root: &Path) -> BTreeMap<String, String> {
    let ignored = ignored(root);
    let relative = |path: &Path| {
        let parts: Vec<String> = path
            .strip_prefix(root)
            .unwrap()
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.join("/")
    };
    let mut files = BTreeMap::new();
    let walk = walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            let path = relative(entry.path());
            let skipped = SKIPPED_NAMES.contains(&name.as_ref()) && entry.file_type().is_dir();
            entry.depth() == 0 || !(skipped || ignored.contains(&path))
        });
    for entry in walk {
        let entry = entry.unwrap();
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            files.insert(relative(entry.path()), text);
        }
    }
    files
}

/// GitHub's flavour, so that tables and footnotes read as GitHub reads them.
fn parser(text: &str) -> Parser<'_> {
    let gfm = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    Parser::new_ext(text, gfm)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Each link and image of a Markdown file: its line and destination. A
/// reference link is checked at its definition, where its destination is
/// written: once however often it is used, and even if it is not.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut events = parser(text).into_offset_iter();
    let mut found = Vec::new();
    for (event, range) in events.by_ref() {
        if let Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            },
        ) = event
            && matches!(link_type, LinkType::Inline | LinkType::Autolink)
        {
            found.push((line_of(text, range.start), dest_url.into_string()));
        }
    }
    let definitions = events.reference_definitions().iter();
    found.extend(definitions.map(|(_, d)| (line_of(text, d.span.start), d.dest.to_string())));
    // Definitions come in no order; links on a line keep theirs.
    found.sort_by_key(|&(line, _)| line);
    found
}

/// The anchors GitHub gives the headings of a Markdown file, from their text
/// as shown: code spans without backticks, links as their text.
fn anchors(text: &str) -> Vec<String> {
    let mut headings = Vec::new();
    let mut heading: Option<String> = None;
    for event in parser(text) {
        match (event, &mut heading) {
            (Event::Start(Tag::Heading { .. }), _) => heading = Some(String::new()),
            (Event::Text(shown) | Event::Code(shown), Some(heading)) => heading.push_str(&shown),
            (Event::End(TagEnd::Heading(_)), _) => headings.extend(heading.take()),
            _ => {}
        }
    }
    github_anchors(headings)
}

/// GitHub's rule: lower-cased, every character that is not a letter, a
/// digit, a space, `-` or `_` dropped, spaces turned into `-`; a second
/// heading with the same anchor gets `-1`, a third `-2`.
fn github_anchors(headings: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = Vec::new();
    for heading in headings {
        let base: String = (heading.as_ref().to_lowercase().chars())
            .filter(|&c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.push(match *count {
            0 => base,
            n => format!("{base}-{n}"),
        });
        *count += 1;
    }
    anchors
}

/// A path relative to `base` (a directory of the repository, with `/`), or
/// to the root when it starts with `/`, made plain; `None` if it leaves the
/// repository.
fn resolve(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = match path.starts_with('/') {
        true => Vec::new(),
        false => base.split('/').filter(|p| !p.is_empty()).collect(),
    };
    for component in Path::new(path.trim_start_matches('/')).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().unwrap()),
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => {}
        }
    }
    Some(parts.join("/"))
}

/// The broken links of the Markdown files under `root`, each as
/// `file:line: destination: why`, and how many links were checked.
fn broken_links(root: &Path, repository: &str) -> (usize, Vec<String>) {
    let files = markdown_files(root);
    let mut anchors_of: HashMap<String, Vec<String>> = HashMap::new();
    let mut has_anchor = |file: &str, anchor: &str| {
        anchors_of
            .entry(file.to_string())
            .or_insert_with(|| match files.get(file) {
                Some(text) => anchors(text),
                None => std::fs::read_to_string(root.join(file))
                    .map(|text| anchors(&text))
                    .unwrap_or_default(),
            })
            .iter()
            .any(|a| a == anchor)
    };
    let in_repository = [
        format!("{repository}/blob/main/"),
        format!("{repository}/tree/main/"),
    ];
    let mut broken = Vec::new();
    let mut checked = 0;
    for (file, text) in &files {
        let directory = file.rsplit_once('/').map_or("", |(dir, _)| dir);
        for (line, target) in links(text) {
            checked += 1;
            let mut fail = |why: String| broken.push(format!("{file}:{line}: {target}: {why}"));
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if target.is_empty() {
                fail("an empty link".to_string());
                continue;
            } else if let Some(within) = in_repository.iter().find_map(|p| path.strip_prefix(p)) {
                resolve("", within)
            } else if path.contains("://") || path.starts_with("mailto:") {
                continue;
            } else if path.is_empty() {
                Some(file.clone())
            } else if file == "README.md" {
                fail(format!(
                    "a relative link in the README leads nowhere on Artifact Hub: write {}{path}",
                    in_repository[0]
                ));
                continue;
            } else {
                resolve(directory, path.split('?').next().unwrap())
            };
            let Some(resolved) = resolved else {
                fail("leads out of the repository".to_string());
                continue;
            };
            if !root.join(&resolved).exists() {
                fail(format!("no file {resolved}"));
            } else if let Some(anchor) = anchor
                && resolved.ends_with(".md")
                && !has_anchor(&resolved, anchor)
            {
                fail(format!("no heading of {resolved} has the anchor #{anchor}"));
            }
        }
    }
    (checked, broken)
}

#[test]
fn every_link_of_every_markdown_file_leads_somewhere() {
    let files = markdown_files(root());
    for file in [
        "README.md",
        "CHANGELOG.md",
        "docs/design.md",
        "docs/test.md",
    ] {
        assert!(files.contains_key(file), "{file} was not read");
    }
    assert!(
        !files.keys().any(|f| f.starts_with("target/")),
        "{:?}",
        files.keys()
    );
    let (checked, broken) = broken_links(root(), &repository());
    assert!(checked >= 50, "only {checked} links checked");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The README links the repository's files by their address on GitHub, and
/// those links are checked: at least the pages it sends its readers to.
#[test]
fn the_readme_links_the_repository_absolutely() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let blob = format!("{}/blob/main/", repository());
    for page in [
        "docs/deploying.md",
        "docs/kubernetes-keys.md",
        "docs/check.md",
        "docs/test.md",
        "docs/performance.md",
        "docs/contributing.md",
    ] {
        assert!(
            readme.contains(&format!("]({blob}{page}")),
            "the README does not link {page}"
        );
    }
}

/// A scratch repository under the test's target directory, emptied.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["docs", "scripts", "target", "fuzz/corpus"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    dir
}

/// The check finds what it must, and nothing in code: a missing file or
/// image, a missing anchor in the same file or another, a relative link in
/// the README, an absolute one to a file the repository lacks, an unused
/// reference definition; links in fences and code spans are not links.
#[test]
fn broken_links_are_found_and_code_is_not_read() {
    let dir = scratch("docs-links");
    let repository = "https://github.com/owner/repo";
    std::fs::write(dir.join(".gitignore"), "/target\n/fuzz/corpus\n").unwrap();
    std::fs::write(
        dir.join("README.md"),
        format!(
            "# Title\n\n## Settings\n\n[ok](#settings) [ok]({repository}/blob/main/docs/a.md#a-b-c)\n\
             [ok]({repository}/tree/main/docs) [out](https://example.com/x.md#none)\n\
             [relative](docs/a.md)\n[gone]({repository}/blob/main/docs/gone.md)\n\
             [no anchor](#nothing)\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/a.md"),
        "# A, b: `c`\n\n## A, b: c\n\n## Same\n\n## Same\n\n\
         [ok](#a-b-c) [ok](#a-b-c-1) [ok](#same-1) [ok](../README.md#settings)\n\
         [ok](b.md \"title\") [ok](<b.md>) [ok][b] <mailto:x@example.com>\n\
         `[code](missing.md)` and ``[code `too`](missing.md)``\n\n\
         ```console\n[fenced](missing.md)\n```\n\n  ~~~~\n  [fenced](missing.md)\n  ~~~~\n\n\
         [bad](#same-2) [bad](../README.md#title-1) [bad](c.md) [bad](../../up.md) ![bad](d.png)\n\n\
         [ref]: missing-too.md\n[b]: b.md#b\n",
    )
    .unwrap();
    std::fs::write(dir.join("docs/b.md"), "# B\n").unwrap();
    // Neither is read: a build's and a generated directory's.
    std::fs::write(dir.join("target/x.md"), "[bad](nothing.md)\n").unwrap();
    std::fs::write(dir.join("fuzz/corpus/x.md"), "[bad](nothing.md)\n").unwrap();

    let (_, broken) = broken_links(&dir, repository);
    let expected = [
        "README.md:7: docs/a.md: a relative link in the README leads nowhere on Artifact Hub: \
         write https://github.com/owner/repo/blob/main/docs/a.md",
        "README.md:8: https://github.com/owner/repo/blob/main/docs/gone.md: no file docs/gone.md",
        "README.md:9: #nothing: no heading of README.md has the anchor #nothing",
        "docs/a.md:21: #same-2: no heading of docs/a.md has the anchor #same-2",
        "docs/a.md:21: ../README.md#title-1: no heading of README.md has the anchor #title-1",
        "docs/a.md:21: c.md: no file docs/c.md",
        "docs/a.md:21: ../../up.md: leads out of the repository",
        "docs/a.md:21: d.png: no file docs/d.png",
        "docs/a.md:23: missing-too.md: no file docs/missing-too.md",
    ];
    assert_eq!(broken, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Headings are read as GitHub shows them, fences hold none.
#[test]
fn headings_are_read_as_shown() {
    let text = "## `check` beside its peers: `make bench-peers`\n\
                ## [Linked](https://example.com) *heading* ##\n\
                ```\n# not a heading\n```\n\
                Setext\n------\n####### seven\n#no space\n";
    let expected = [
        "check-beside-its-peers-make-bench-peers",
        "linked-heading",
        "setext",
    ];
    assert_eq!(anchors(text), expected);
}

#[test]
fn anchors_are_githubs() {
    let headings = [
        "Annotations that Kubernetes and kubectl write themselves",
        "0.5.0 against 0.4.0",
        "Adding a request to test_data/",
        "Verifying a release",
        "Verifying a release",
        "Verifying a release!",
    ];
    let expected = [
        "annotations-that-kubernetes-and-kubectl-write-themselves",
        "050-against-040",
        "adding-a-request-to-test_data",
        "verifying-a-release",
        "verifying-a-release-1",
        "verifying-a-release-2",
    ];
    assert_eq!(github_anchors(headings), expected);
}

/// The README's "of about N KiB" is the built module's size, within 3 %.
/// `policy.wasm` is read, not built: `tests/common` would link the host's
/// wasmtime into this test to build it.
#[test]
fn the_readme_states_the_modules_size() {
    let module = root().join("policy.wasm");
    let Ok(metadata) = std::fs::metadata(&module) else {
        panic!("no {}: run `make policy.wasm`", module.display());
    };
    let actual = metadata.len() as f64 / 1024.0;
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let size = Regex::new(r"of about (\d+(?:\.\d+)?)\s+KiB").unwrap();
    let stated: f64 = size
        .captures(&readme)
        .expect("the README states the module's size as \"of about N KiB\"")[1]
        .parse()
        .unwrap();
    assert!(
        (stated - actual).abs() <= 0.03 * actual,
        "the README says the module is of about {stated} KiB, policy.wasm is {actual:.1} KiB"
    );
}

/// The differences by design between `check` and a live API server that the
/// cluster tests name (`cluster/harness/differences.tsv`, which the harness
/// embeds and holds each object to) are docs/check.md's table, row for row,
/// in order.
#[test]
fn the_check_page_lists_the_differences_the_cluster_tests_name() {
    let table = std::fs::read_to_string(root().join("cluster/harness/differences.tsv")).unwrap();
    let mut lines = table.lines();
    assert_eq!(lines.next(), Some("id\twhy"), "differences.tsv's header");
    let want: Vec<String> = lines
        .map(|line| {
            let (id, why) = line.split_once('\t').expect("differences.tsv: id<TAB>why");
            assert!(
                !why.contains('|'),
                "{id}: a `|` would split the table's cell"
            );
            format!("| `{id}` | {why} |")
        })
        .collect();
    let page = std::fs::read_to_string(root().join("docs/check.md")).unwrap();
    let heading = "## Where check and the API server differ\n";
    let start = page.find(heading).expect(heading);
    let listed: Vec<&str> = page[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .collect();
    assert!(
        listed == want,
        "docs/check.md, {heading:?}: the table's rows must be cluster/harness/differences.tsv's:\n{}",
        want.join("\n")
    );
}

/// Where a Markdown file under `root` names a peer with another version than
/// `scripts/peers` pins (`KYVERNO=v1.19.1`), and how many it names.
fn peer_versions_unpinned(root: &Path) -> (usize, Vec<String>) {
    let script = std::fs::read_to_string(root.join("scripts/peers")).unwrap();
    let pin = Regex::new(r"(?m)^(KYVERNO|GATEKEEPER|CONFTEST)=(v\d+\.\d+\.\d+)\s*$").unwrap();
    let pinned: HashMap<String, &str> = (pin.captures_iter(&script))
        .map(|c| (c[1].to_lowercase(), c.get(2).unwrap().as_str()))
        .collect();
    assert_eq!(pinned.len(), 3, "scripts/peers pins: {pinned:?}");
    let named =
        Regex::new(r"(?i)\b(kyverno|gatekeeper|gator|conftest)`?(?:\s+|@)(v\d+\.\d+\.\d+)\b")
            .unwrap();
    let mut wrong = Vec::new();
    let mut found = 0;
    for (file, text) in markdown_files(root) {
        for c in named.captures_iter(&text) {
            found += 1;
            // gator is Gatekeeper's.
            let tool = c[1].to_lowercase().replace("gator", "gatekeeper");
            let (pin, line) = (pinned[&tool], line_of(&text, c.get(0).unwrap().start()));
            if pin != &c[2] {
                let (name, version) = (&c[1], &c[2]);
                wrong.push(format!(
                    "{file}:{line}: {name} {version}: scripts/peers pins {pin}"
                ));
            }
        }
    }
    (found, wrong)
}

#[test]
fn the_docs_name_the_peers_versions_that_scripts_peers_pins() {
    let (found, wrong) = peer_versions_unpinned(root());
    assert!(found >= 3, "only {found} peer versions named in the docs");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn an_unpinned_peer_version_is_found() {
    let dir = scratch("docs-peers");
    let pins = "KYVERNO=v1.19.1\nGATEKEEPER=v3.23.1\nCONFTEST=v0.71.1\n";
    std::fs::write(dir.join("scripts/peers"), pins).unwrap();
    std::fs::write(
        dir.join("docs/a.md"),
        "Kyverno v1.19.1, `gator` v3.22.0,\nconftest\nv0.70.0, gatekeeper@v3.23.1\n",
    )
    .unwrap();
    let (found, wrong) = peer_versions_unpinned(&dir);
    assert_eq!(found, 4);
    let expected = [
        "docs/a.md:1: gator v3.22.0: scripts/peers pins v3.23.1",
        "docs/a.md:2: conftest v0.70.0: scripts/peers pins v0.71.1",
    ];
    assert_eq!(wrong, expected);
    let _ = std::fs::remove_dir_all(&dir);
}
