//! libyaml's parser, one event at a time: the grammar kubectl's YAML
//! library (go-yaml v2, a port of libyaml) reads, and the only `unsafe`
//! of the host. `libyaml-rs` is libyaml translated to Rust (the parser
//! under `yaml_serde`); its interface is libyaml's C one, raw pointers
//! and all, and `yaml_serde` keeps its safe wrapper private, so this is
//! ours: an event borrows libyaml's buffers until the next is asked for,
//! so that reading a scalar allocates nothing of our own.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use libyaml_rs as sys;

/// Where an event or an error is, counted from 0 in the text parsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    /// In bytes.
    pub index: usize,
    pub line: usize,
    pub column: usize,
}

impl Mark {
    fn of(mark: sys::yaml_mark_t) -> Mark {
        Mark {
            index: mark.index as usize,
            line: mark.line as usize,
            column: mark.column as usize,
        }
    }
}

/// One event of the document, borrowing the parser's buffers.
#[derive(Debug)]
pub enum Event<'p> {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias {
        anchor: &'p str,
    },
    Scalar {
        anchor: Option<&'p str>,
        tag: Option<&'p str>,
        value: &'p str,
        /// Written plain, not quoted nor as a block.
        plain: bool,
        /// libyaml's `plain_implicit`: plain and untagged, or tagged `!`.
        /// Only such a scalar is resolved by the YAML 1.1 rules (`yes`,
        /// `0400`); the others are strings unless a tag says otherwise.
        implicit: bool,
    },
    SequenceStart {
        anchor: Option<&'p str>,
        /// In flow style: `[a, b]`.
        flow: bool,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<&'p str>,
        /// In flow style: `{a: b}`.
        flow: bool,
    },
    MappingEnd,
}

/// Why the text is not YAML, as libyaml says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub problem: String,
    pub problem_mark: Mark,
    pub context: Option<(String, Mark)>,
}

impl Error {
    /// libyaml's words, its lines counted in the file whose line
    /// `first_line` the text starts on.
    pub fn in_file(&self, first_line: usize) -> String {
        let shift = |mark: Mark| Mark {
            line: mark.line + first_line - 1,
            ..mark
        };
        Error {
            problem: self.problem.clone(),
            problem_mark: shift(self.problem_mark),
            context: self.context.as_ref().map(|(c, m)| (c.clone(), shift(*m))),
        }
        .to_string()
    }
}

impl fmt::Display for Error {
    /// libyaml's words, at lines and columns counted from 1.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |mark: Mark| format!("line {} column {}", mark.line + 1, mark.column + 1);
        write!(f, "{} at {}", self.problem, at(self.problem_mark))?;
        if let Some((context, mark)) = &self.context {
            write!(f, ", {context}")?;
            if *mark != self.problem_mark {
                write!(f, " at {}", at(*mark))?;
            }
        }
        Ok(())
    }
}

/// A parser over one text, which it borrows.
pub struct Parser<'t> {
    /// Boxed: libyaml keeps pointers into the parser itself.
    sys: Box<sys::yaml_parser_t>,
    event: Option<sys::yaml_event_t>,
    text: PhantomData<&'t str>,
}

// SAFETY: the parser owns its buffers and reads only `text`, which
// outlives it; nothing in it is shared with another parser.
unsafe impl Send for Parser<'_> {}

impl<'t> Parser<'t> {
    pub fn new(text: &'t str) -> Parser<'t> {
        let mut sys = Box::new(MaybeUninit::<sys::yaml_parser_t>::zeroed());
        // SAFETY: `yaml_parser_initialize` writes every field of the
        // zeroed parser; it fails only when memory runs out, which
        // libyaml-rs turns into an abort. The input is `text`, which
        // outlives the parser.
        let sys = unsafe {
            let parser = sys.as_mut_ptr();
            assert!(
                !sys::yaml_parser_initialize(parser).fail,
                "libyaml could not start a parser"
            );
            sys::yaml_parser_set_encoding(parser, sys::YAML_UTF8_ENCODING);
            sys::yaml_parser_set_input_string(parser, text.as_ptr(), text.len() as u64);
            sys.assume_init()
        };
        Parser {
            sys,
            event: None,
            text: PhantomData,
        }
    }

    /// The next event and where it starts; the one before is freed.
    pub fn next(&mut self) -> Result<(Event<'_>, Mark), Error> {
        self.free_event();
        let mut event = MaybeUninit::<sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised; on success libyaml wrote
        // the event, which is freed before the next is parsed, or on drop.
        if self.sys.error != sys::YAML_NO_ERROR {
            return Err(self.error());
        }
        let event = unsafe {
            if sys::yaml_parser_parse(&mut *self.sys, event.as_mut_ptr()).fail {
                return Err(self.error());
            }
            event.assume_init()
        };
        let mark = Mark::of(event.start_mark);
        let event = self.event.insert(event);
        // SAFETY: the pointers of the event are libyaml's, valid until it
        // is freed, which needs `&mut self`: the borrow of the result.
        Ok((unsafe { convert(event) }, mark))
    }

    fn error(&self) -> Error {
        let text = |text: *const std::ffi::c_char| {
            NonNull::new(text.cast_mut()).map(|text| {
                // SAFETY: libyaml's messages are static C strings.
                unsafe { std::ffi::CStr::from_ptr(text.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
        };
        Error {
            problem: text(self.sys.problem.cast())
                .unwrap_or_else(|| "libyaml failed and said nothing".to_string()),
            problem_mark: Mark::of(self.sys.problem_mark),
            context: text(self.sys.context.cast()).map(|c| (c, Mark::of(self.sys.context_mark))),
        }
    }

    fn free_event(&mut self) {
        if let Some(mut event) = self.event.take() {
            // SAFETY: an event libyaml wrote, freed once.
            unsafe { sys::yaml_event_delete(&mut event) };
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        self.free_event();
        // SAFETY: initialised in `new`, deleted once.
        unsafe { sys::yaml_parser_delete(&mut *self.sys) };
    }
}

/// The event's data as Rust borrows. libyaml checked the text is UTF-8,
/// and its scalars, anchors and tags are cut from it (or from escapes it
/// encoded as UTF-8).
///
/// # Safety
/// `event` was written by `yaml_parser_parse` and is not yet freed.
unsafe fn convert<'e>(event: &'e sys::yaml_event_t) -> Event<'e> {
    unsafe fn text<'e>(ptr: *const u8) -> Option<&'e str> {
        let ptr = NonNull::new(ptr.cast_mut())?;
        let bytes = unsafe { std::ffi::CStr::from_ptr(ptr.as_ptr().cast()) }.to_bytes();
        Some(std::str::from_utf8(bytes).unwrap_or_default())
    }
    unsafe {
        match event.type_ {
            sys::YAML_STREAM_START_EVENT => Event::StreamStart,
            sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
            sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
            sys::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            sys::YAML_ALIAS_EVENT => Event::Alias {
                anchor: text(event.data.alias.anchor).unwrap_or_default(),
            },
            sys::YAML_SCALAR_EVENT => {
                let scalar = &event.data.scalar;
                let bytes = match NonNull::new(scalar.value) {
                    Some(value) => {
                        std::slice::from_raw_parts(value.as_ptr(), scalar.length as usize)
                    }
                    None => &[],
                };
                Event::Scalar {
                    anchor: text(scalar.anchor),
                    tag: text(scalar.tag),
                    value: std::str::from_utf8(bytes).unwrap_or_default(),
                    plain: scalar.style == sys::YAML_PLAIN_SCALAR_STYLE,
                    implicit: scalar.plain_implicit,
                }
            }
            sys::YAML_SEQUENCE_START_EVENT => Event::SequenceStart {
                anchor: text(event.data.sequence_start.anchor),
                flow: event.data.sequence_start.style == sys::YAML_FLOW_SEQUENCE_STYLE,
            },
            sys::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
            sys::YAML_MAPPING_START_EVENT => Event::MappingStart {
                anchor: text(event.data.mapping_start.anchor),
                flow: event.data.mapping_start.style == sys::YAML_FLOW_MAPPING_STYLE,
            },
            _ => Event::MappingEnd,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Result<Vec<String>, Error> {
        let mut parser = Parser::new(text);
        let mut out = Vec::new();
        loop {
            let (event, mark) = parser.next()?;
            let end = matches!(event, Event::StreamEnd);
            out.push(format!("{}:{} {event:?}", mark.line, mark.column));
            if end {
                return Ok(out);
            }
        }
    }

    #[test]
    fn events_borrow_the_text_and_errors_say_where() {
        let read = events("a: &x 'b'\nc: [*x, !!int 1]\n").unwrap();
        assert_eq!(read.len(), 13, "{read:#?}");
        assert!(read[4].contains("anchor: Some(\"x\")") && read[4].contains("implicit: false"));
        assert!(read[7].starts_with("1:4 Alias"), "{read:#?}");
        assert!(
            read[8].contains("tag: Some(\"tag:yaml.org,2002:int\")"),
            "{read:#?}"
        );
        let error = events("a: [1,\nb: 2\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 1 column 4"
        );
        // Dropped half way: its event and buffers are freed.
        let mut parser = Parser::new("a: [1, 2]\n");
        parser.next().unwrap();
        parser.next().unwrap();
    }
}
