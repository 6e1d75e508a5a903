//! `policy-runner test`: test files that say what each policy must decide
//! of which objects (a Kyverno user reads them at sight: `kind: Test`,
//! `policies`, `resources`, `results`), run as `check` judges, and held to
//! what they say. Each test file runs on a core of its own, with instances
//! of modules compiled once for the whole run; the report keeps the order
//! of the files and of their results.

pub mod cases;
pub mod file;
pub mod loaded;
pub mod report;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use cases::Row;
use file::TestFile;
use loaded::Modules;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table, then the summary line.
    Table,
    Json,
    /// JUnit XML: a suite a test file, a test case a row.
    Junit,
}

/// A whole `test`, as the command line gives it.
#[derive(Debug, Clone)]
pub struct Command {
    /// Test files, or directories searched for `file_name`.
    pub paths: Vec<PathBuf>,
    pub file_name: String,
    /// Only the rows whose test or object this matches.
    pub run: Option<regex::Regex>,
    /// Print only the rows that failed (the summary counts them all).
    pub fail_only: bool,
    pub format: Format,
    /// How many test files run at once; 0: one a core.
    pub jobs: usize,
    /// The module every policy runs, instead of the test files' `modules`.
    pub module: Option<PathBuf>,
    /// Where a module the test files do not map is found.
    pub store: crate::modules::Store,
    /// What bounds each evaluation (`--policy-timeout`, which a policy's
    /// `timeoutEvalSeconds` overrides, and `--max-memory`).
    pub limits: policy_evaluator::Limits,
}

/// What test files gave: one file's, or a whole run's.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    /// What could not be used, each naming its file: exit status 2.
    pub errors: Vec<String>,
    pub notes: Vec<String>,
    /// Rows `--run` left out.
    pub left_out: usize,
}

impl Outcome {
    /// Adds what another test file gave, each note said once.
    fn absorb(&mut self, other: Outcome) {
        self.rows.extend(other.rows);
        self.errors.extend(other.errors);
        self.left_out += other.left_out;
        for note in other.notes {
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }

    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.passed).count()
    }

    pub fn failed(&self) -> usize {
        self.rows.len() - self.passed()
    }

    /// 0 when every row passed, 1 when one failed, 2 when something could
    /// not be used or there was nothing to run.
    pub fn status(&self) -> u8 {
        match (self.errors.is_empty(), self.failed()) {
            (false, _) => 2,
            (true, 0) => 0,
            (true, _) => 1,
        }
    }
}

/// What a test run prints, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub status: u8,
    /// The report, for standard output.
    pub output: String,
    /// Errors and notes, for standard error.
    pub said: Vec<String>,
}

impl Command {
    pub fn run(&self) -> Finished {
        let outcome = self.outcome();
        let output = match self.format {
            Format::Table => report::table(&outcome, self.fail_only),
            Format::Json => report::json(&outcome, self.fail_only),
            Format::Junit => report::junit(&outcome, self.fail_only),
        };
        let mut said: Vec<String> = outcome
            .errors
            .iter()
            .map(|e| format!("error: {e}"))
            .collect();
        said.extend(outcome.notes.iter().map(|n| format!("note: {n}")));
        Finished {
            status: outcome.status(),
            output,
            said,
        }
    }

    /// Finds the test files, compiles their modules once, and runs the
    /// files in parallel.
    pub fn outcome(&self) -> Outcome {
        let mut outcome = Outcome::default();
        let mut files = Vec::new();
        for path in &self.paths {
            match find(path, &self.file_name) {
                Ok(found) if found.is_empty() => outcome.errors.push(format!(
                    "{}: no test file (`{}`) found",
                    path.display(),
                    self.file_name
                )),
                Ok(found) => files.extend(found),
                Err(e) => outcome.errors.push(e),
            }
        }
        // Each file once, however many paths reach it.
        let mut seen = std::collections::HashSet::new();
        files.retain(|file| seen.insert(loaded::canonical(file)));
        let mut tests = Vec::new();
        for path in files {
            match TestFile::read(&path) {
                Ok(test) => tests.push(test),
                Err(e) => outcome.errors.push(format!("{}: {e}", path.display())),
            }
        }
        let modules = Modules::new(
            tests.iter(),
            self.module.clone(),
            self.store.clone(),
            self.limits,
        );
        let selected = |test: &str, object: &str| {
            self.run
                .as_ref()
                .is_none_or(|re| re.is_match(test) || re.is_match(object))
        };
        let run_all = || -> Vec<Outcome> {
            tests
                .par_iter()
                .map(|test| cases::run(test, &modules, &selected))
                .collect()
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.jobs)
            .build();
        let ran = match pool {
            Ok(pool) => pool.install(run_all),
            Err(e) => {
                outcome
                    .errors
                    .push(format!("cannot start {} workers: {e}", self.jobs));
                return outcome;
            }
        };
        for ran in ran {
            outcome.absorb(ran);
        }
        if let Some(run) = &self.run
            && outcome.rows.is_empty()
            && outcome.left_out > 0
        {
            // A filter that leaves nothing would pass without testing.
            outcome.errors.push(format!(
                "--run `{run}` matches no test and no object: all {} results left out",
                outcome.left_out
            ));
        }
        outcome
    }
}

/// The test files `path` gives: itself if it is a file, else every file
/// named `file_name` below it (but in `.git`), in name order, links
/// followed (one back to an ancestor once).
fn find(path: &Path, file_name: &str) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(format!("{}: no such file or directory", path.display()));
    }
    let mut found = Vec::new();
    let walk = walkdir::WalkDir::new(path)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.file_name() != ".git");
    for entry in walk {
        let entry = match entry {
            // A link back to an ancestor holds only what the walk finds
            // anyway.
            Err(e) if e.loop_ancestor().is_some() => continue,
            entry => entry.map_err(|e| format!("{}: {e}", path.display()))?,
        };
        if entry.file_type().is_file() && entry.file_name() == file_name {
            found.push(entry.into_path());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `policy-runner test` at the repository's root finds the project's
    /// suites, which pass (tests/suites.rs), and not the one kept to fail;
    /// a link back up is walked once.
    #[test]
    fn the_root_of_the_repository_holds_only_suites_that_pass() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let found = find(&root, file::FILE_NAME).unwrap();
        let ours: Vec<_> = found
            .iter()
            .filter_map(|f| f.strip_prefix(&root).ok())
            .filter(|f| !f.starts_with("target"))
            .collect();
        assert!(ours.len() >= 5, "{ours:?}");
        for file in ours {
            assert!(file.starts_with("tests/suites"), "{}", file.display());
            assert!(
                !file.starts_with("tests/suites-failing"),
                "{}",
                file.display()
            );
        }
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("a")).unwrap();
            std::fs::write(dir.path().join("a").join(file::FILE_NAME), "").unwrap();
            std::os::unix::fs::symlink(dir.path(), dir.path().join("a/up")).unwrap();
            let found = find(dir.path(), file::FILE_NAME).unwrap();
            assert_eq!(found, [dir.path().join("a").join(file::FILE_NAME)]);
        }
    }
}
