//! The objects read, waiting on disk while the rest of the input is read:
//! an object is judged only once the whole input has said who owns what,
//! what each Namespace is labelled and which custom kinds are
//! cluster-wide, and a cluster dump is too big to wait in memory (a
//! 200 MB dump is over 1 GB as values). Kept as compact JSON, which reads
//! back ten times faster than YAML parses.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, Write};

use serde::Deserialize;
use serde_json::Value;

use super::Manifest;
use policy_manifests::Source;

/// Objects written one after another: each a line `LENGTH LINE ITEM FILE`
/// (`ITEM` 0 for none, else its index + 1; `FILE` an index into the file
/// names) and then its JSON.
pub struct Spill {
    writer: BufWriter<File>,
    files: Vec<String>,
    count: usize,
    /// The first write that failed: said when the objects are read back.
    failed: Option<io::Error>,
}

impl Spill {
    pub fn new() -> io::Result<Spill> {
        Ok(Spill {
            writer: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
            files: Vec::new(),
            count: 0,
            failed: None,
        })
    }

    pub fn push(&mut self, manifest: &Manifest) {
        if self.failed.is_some() {
            return;
        }
        let source = &manifest.source;
        if self.files.last() != Some(&source.file) {
            self.files.push(source.file.clone());
        }
        let json = manifest.json.as_bytes();
        let item = source.item.map_or(0, |i| i + 1);
        let file = self.files.len() - 1;
        let written = writeln!(self.writer, "{} {} {item} {file}", json.len(), source.line)
            .and_then(|()| self.writer.write_all(json));
        match written {
            Ok(()) => self.count += 1,
            Err(e) => self.failed = Some(e),
        }
    }

    /// How many objects wait.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The objects, in the order they were pushed.
    pub fn read_back(self) -> io::Result<ReadBack> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let mut file = self.writer.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        Ok(ReadBack {
            reader: BufReader::with_capacity(1 << 16, file),
            files: self.files,
            header: String::new(),
            left: self.count,
        })
    }
}

pub struct ReadBack {
    reader: BufReader<File>,
    files: Vec<String>,
    header: String,
    left: usize,
}

/// An object read back: its JSON, parsed by whoever judges it.
pub struct Spilled {
    pub json: Vec<u8>,
    pub source: Source,
}

impl Spilled {
    /// The object, as a tree of values.
    pub fn object(&self) -> io::Result<Value> {
        let mut de = serde_json::Deserializer::from_slice(&self.json);
        // As deep as it was read: the readers' own limits held it.
        de.disable_recursion_limit();
        Value::deserialize(&mut de).map_err(io::Error::other)
    }
}

impl ReadBack {
    fn next_spilled(&mut self) -> io::Result<Spilled> {
        self.header.clear();
        self.reader.read_line(&mut self.header)?;
        let broken = || io::Error::other("the objects read were changed on disk");
        let numbers: Vec<usize> = self
            .header
            .split_ascii_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| broken())?;
        let [length, line, item, file] = numbers[..] else {
            return Err(broken());
        };
        let mut json = vec![0; length];
        self.reader.read_exact(&mut json)?;
        Ok(Spilled {
            json,
            source: Source {
                file: self.files.get(file).ok_or_else(broken)?.clone(),
                line,
                item: item.checked_sub(1),
            },
        })
    }
}

impl Iterator for ReadBack {
    type Item = io::Result<Spilled>;

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        Some(self.next_spilled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_come_back_as_they_went() {
        let manifests: Vec<Manifest> = [
            (
                json!({"kind": "Pod", "metadata": {"name": "a\nb", "annotations": {"x": "é"}}}),
                "a.yaml",
                3,
                None,
            ),
            (
                json!({"kind": "List item", "deep": [[[[[[1.5, null, true]]]]]]}),
                "a.yaml",
                7,
                Some(0),
            ),
            (json!({"kind": "Secret"}), "dir/b c.json", 1, Some(12)),
        ]
        .into_iter()
        .map(|(object, file, line, item)| {
            let source = Source {
                file: file.to_string(),
                line,
                item,
            };
            Manifest::new(&object, source).unwrap()
        })
        .collect();
        let mut spill = Spill::new().unwrap();
        for manifest in &manifests {
            spill.push(manifest);
        }
        assert_eq!(spill.len(), 3);
        let back: Vec<Spilled> = spill.read_back().unwrap().map(Result::unwrap).collect();
        assert_eq!(back.len(), 3);
        for (back, manifest) in back.iter().zip(&manifests) {
            assert_eq!(back.object().unwrap(), manifest.object());
            assert_eq!(back.source, manifest.source);
        }
    }
}
