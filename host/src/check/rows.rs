//! The verdicts of a check, kept on disk as they are made and read back
//! for the report as often as it needs them: a dump of a million objects
//! has about as many rows, which held in memory were most of a run's
//! peak (docs/performance.md). Only their counts stay in memory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};

use super::Row;

pub struct Rows {
    kept: Kept,
    len: usize,
    rejected: usize,
    failed: usize,
}

enum Kept {
    /// A handful, as the unit tests make them.
    Memory(Vec<Row>),
    /// Being written: one compact JSON line a row.
    Writing {
        writer: BufWriter<File>,
        /// The first write that failed: said when the rows are read.
        failed: Option<io::Error>,
    },
    /// Written; each reading has an offset of its own.
    Written(File),
}

impl Default for Rows {
    fn default() -> Rows {
        Rows::from(Vec::new())
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("len", &self.len)
            .field("rejected", &self.rejected)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl From<Vec<Row>> for Rows {
    fn from(rows: Vec<Row>) -> Rows {
        Rows {
            len: rows.len(),
            rejected: rows.iter().filter(|row| row.rejected()).count(),
            failed: rows.iter().filter(|row| row.failed).count(),
            kept: Kept::Memory(rows),
        }
    }
}

impl Rows {
    /// Rows to be written to an unnamed temporary file, gone with the
    /// process however it ends.
    pub fn on_disk() -> io::Result<Rows> {
        Ok(Rows {
            kept: Kept::Writing {
                writer: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
                failed: None,
            },
            len: 0,
            rejected: 0,
            failed: 0,
        })
    }

    pub fn push(&mut self, row: Row) {
        self.len += 1;
        self.rejected += usize::from(row.rejected());
        self.failed += usize::from(row.failed);
        match &mut self.kept {
            Kept::Memory(rows) => rows.push(row),
            Kept::Writing { writer, failed } => {
                if failed.is_none() {
                    let written = serde_json::to_writer(&mut *writer, &row)
                        .map_err(io::Error::from)
                        .and_then(|()| writer.write_all(b"\n"));
                    *failed = written.err();
                }
            }
            Kept::Written(_) => unreachable!("a row pushed after the rows were finished"),
        }
    }

    /// Ends the writing: the rows can be read from now on.
    pub fn finish(&mut self) -> io::Result<()> {
        let kept = std::mem::replace(&mut self.kept, Kept::Memory(Vec::new()));
        self.kept = match kept {
            Kept::Writing {
                failed: Some(error),
                ..
            } => return Err(error),
            Kept::Writing { writer, .. } => {
                Kept::Written(writer.into_inner().map_err(|e| e.into_error())?)
            }
            done => done,
        };
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows a policy rejected (not those it could not judge).
    pub fn rejected(&self) -> usize {
        self.rejected
    }

    /// Rows some policy could not judge.
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Every row, for a test to change.
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<Row> {
        self.iter().map(|row| row.expect("rows to read")).collect()
    }

    /// The rows in the order they were pushed; an error when the file
    /// they are kept in cannot be read.
    pub fn iter(&self) -> Box<dyn Iterator<Item = io::Result<Row>> + '_> {
        match &self.kept {
            Kept::Memory(rows) => Box::new(rows.iter().cloned().map(Ok)),
            Kept::Written(file) => Box::new(Lines::new(file, self.len)),
            Kept::Writing { .. } => Box::new(std::iter::once(Err(io::Error::other(
                "the rows were read before they were finished",
            )))),
        }
    }
}

/// A reading of the rows' file from its start, at an offset of its own.
struct Lines<'f> {
    reader: BufReader<At<'f>>,
    line: String,
    left: usize,
}

impl<'f> Lines<'f> {
    fn new(file: &'f File, len: usize) -> Lines<'f> {
        Lines {
            reader: BufReader::with_capacity(1 << 16, At { file, offset: 0 }),
            line: String::new(),
            left: len,
        }
    }
}

impl Iterator for Lines<'_> {
    type Item = io::Result<Row>;

    fn next(&mut self) -> Option<io::Result<Row>> {
        self.left = self.left.checked_sub(1)?;
        self.line.clear();
        let row = match self.reader.read_line(&mut self.line) {
            Ok(0) => Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => serde_json::from_str(&self.line).map_err(io::Error::from),
            Err(e) => Err(e),
        };
        if row.is_err() {
            // One error, then no more rows.
            self.left = 0;
        }
        Some(row.map_err(|e| io::Error::other(format!("cannot read back the verdicts: {e}"))))
    }
}

/// A file read from an offset of its own: readings of one file side by
/// side, without seeking the handle they share.
struct At<'f> {
    file: &'f File,
    offset: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        let read = std::os::unix::fs::FileExt::read_at(self.file, buf, self.offset)?;
        #[cfg(windows)]
        let read = std::os::windows::fs::FileExt::seek_read(self.file, buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_manifests::Source;

    fn row(object: &str, accepted: bool) -> Row {
        Row {
            object: object.to_string(),
            derived_from: vec!["Deployment shop/web".to_string()],
            source: Source {
                file: "dir/a b.yaml".to_string(),
                line: 3,
                item: Some(2),
            },
            accepted,
            failed: false,
            message: (!accepted).then(|| "lacks \"x\"\nand é".to_string()),
            annotations: vec!["a".to_string(), "b/c".to_string()],
            audited: accepted,
            verdicts: Vec::new(),
        }
    }

    #[test]
    fn rows_come_back_as_they_went_each_time_they_are_read() {
        let rows: Vec<Row> = (0..3000)
            .map(|i| row(&format!("Pod shop/p{i}"), i % 3 != 0))
            .collect();
        let mut kept = Rows::on_disk().unwrap();
        for row in &rows {
            kept.push(row.clone());
        }
        assert!(kept.iter().next().unwrap().is_err(), "read before finished");
        kept.finish().unwrap();
        assert_eq!((kept.len(), kept.rejected()), (3000, 1000));
        // Two readings side by side, each from the start.
        let mut first = kept.iter();
        let second: Vec<Row> = kept.iter().map(Result::unwrap).collect();
        assert_eq!(second, rows);
        let first: Vec<Row> = first.by_ref().map(Result::unwrap).collect();
        assert_eq!(first, rows);
    }

    #[test]
    fn rows_in_memory_read_alike() {
        let rows = vec![row("Pod a/b", false), row("Pod a/c", true)];
        let kept = Rows::from(rows.clone());
        assert_eq!((kept.len(), kept.rejected()), (2, 1));
        let back: Vec<Row> = kept.iter().map(Result::unwrap).collect();
        assert_eq!(back, rows);
    }

    #[test]
    fn a_file_changed_under_the_rows_is_an_error_not_a_row() {
        let mut kept = Rows::on_disk().unwrap();
        kept.push(row("Pod a/b", true));
        kept.push(row("Pod a/c", true));
        kept.finish().unwrap();
        if let Kept::Written(file) = &kept.kept {
            file.set_len(10).unwrap();
        }
        let back: Vec<io::Result<Row>> = kept.iter().collect();
        assert_eq!(back.len(), 1);
        let error = back[0].as_ref().unwrap_err().to_string();
        assert!(
            error.starts_with("cannot read back the verdicts"),
            "{error}"
        );
    }
}
