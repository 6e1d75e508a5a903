//! Skipping a container token by token: the tokens of `scan` are walked
//! with the grammar checked at each, and only the open containers are kept,
//! a bit each, so that no nesting depth exhausts the stack. Numbers and
//! literals, every byte of which is a token, are measured here too.

use super::{BLOCK, grammar};

/// The cursor (block, tokens not yet taken) that takes every token before
/// `end`: the rest of a number or literal, each of whose bytes is a token.
#[inline(always)]
pub(super) fn cursor_at(tokens: &[u64], end: usize) -> (usize, u64) {
    let block = end / BLOCK;
    let pending = tokens.get(block).copied().unwrap_or(0);
    (block, pending & !0 << (end % BLOCK))
}

/// Where the number or literal at `at` ends. Small integers and the
/// literals, most of what an object holds, are told apart inline.
#[inline(always)]
pub(super) fn scalar(input: &[u8], at: usize) -> Option<usize> {
    let word = |end: usize, word: &[u8; 4]| {
        let bytes = input.get(end - 4..end)?;
        (bytes == word).then_some(end)
    };
    match input[at] {
        b'1'..=b'9' => {
            let mut end = at + 1;
            while input.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            match input.get(end) {
                Some(b'.' | b'e' | b'E') => grammar::number(input, at).ok(),
                _ => Some(end),
            }
        }
        b'-' | b'0' => grammar::number(input, at).ok(),
        b't' => word(at + 4, b"true"),
        b'f' => word(at + 5, b"alse"),
        b'n' => word(at + 4, b"null"),
        _ => None,
    }
}

#[cold]
#[inline(never)]
fn spill_push(spill: &mut Vec<u64>, word: u64) {
    spill.push(word);
}

#[cold]
#[inline(never)]
fn spill_pop(spill: &mut Vec<u64>) -> Option<u64> {
    spill.pop()
}

/// Walks the tokens of the object or array at the next token, checking the
/// grammar, and takes them: where it ends, or `None` where the input is not
/// JSON. The cursor (`block`, `pending`) is kept in locals on the way, and
/// nothing else is carried from one token to the next but the open
/// containers.
pub(super) fn walk(
    input: &[u8],
    tokens: &[u64],
    cursor_block: &mut usize,
    cursor_pending: &mut u64,
    spill: &mut Vec<u64>,
) -> Option<usize> {
    let (mut block, mut pending) = (*cursor_block, *cursor_pending);
    let mut base = block * BLOCK;
    // The next token's position and byte, left in place.
    macro_rules! peek {
        () => {{
            while pending == 0 {
                block += 1;
                base += BLOCK;
                pending = *tokens.get(block)?;
            }
            let at = base + pending.trailing_zeros() as usize;
            debug_assert!(at < input.len());
            // SAFETY: tokens lie inside the input: `scan` pads the last
            // block with white space, which holds none.
            (at, unsafe { *input.get_unchecked(at) })
        }};
    }
    // The same, taken.
    macro_rules! next {
        () => {{
            let token = peek!();
            pending &= pending - 1;
            token
        }};
    }
    spill.clear();
    // Bit 0 is the innermost open container, set for an object; the highest
    // set bit is a sentinel, so `open == 1` means none is open in this word.
    let mut open: u64 = 1;
    let end = 'value: loop {
        let (at, byte) = next!();
        match byte {
            b'"' => {}
            b'{' | b'[' => {
                let object = byte == b'{';
                let (first, first_byte) = peek!();
                // `}` and `]` follow their openers two code points later.
                if first_byte == byte + 2 {
                    pending &= pending - 1;
                    if open == 1 {
                        break first + 1;
                    }
                } else {
                    if open >> 63 != 0 {
                        spill_push(spill, open);
                        open = 1;
                    }
                    open = open << 1 | u64::from(object);
                    if object {
                        pending &= pending - 1;
                        if first_byte != b'"' || next!().1 != b':' {
                            return None;
                        }
                    }
                    continue 'value;
                }
            }
            _ => {
                // Every byte of a number or literal is a token: take the
                // rest of them.
                let end = scalar(input, at)?;
                (block, pending) = cursor_at(tokens, end);
                base = block * BLOCK;
                if open == 1 {
                    break end;
                }
            }
        }
        // A value has ended: close containers until one goes on.
        loop {
            let (token, byte) = next!();
            let object = open & 1 != 0;
            match byte {
                b',' => {
                    if object && (next!().1 != b'"' || next!().1 != b':') {
                        return None;
                    }
                    continue 'value;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            open >>= 1;
            if open == 1 {
                match spill_pop(spill) {
                    Some(word) => open = word,
                    None => break 'value token + 1,
                }
            }
        }
    };
    (*cursor_block, *cursor_pending) = (block, pending);
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::super::{Reader, Result, grammar};
    use super::*;
    use crate::test_support::damaged;
    use proptest::prelude::*;
    use serde::Deserialize;

    fn skip(input: &[u8]) -> Result<()> {
        let mut reader = Reader::new(input);
        reader.skip_value()?;
        reader.end()
    }

    /// Agreement with serde_json's own `IgnoredAny` on hand-picked inputs;
    /// the property and fuzz tests cover arbitrary ones.
    #[test]
    fn skipping_agrees_with_serde_json() {
        let cases: &[&[u8]] = &[
            b"0",
            b"-0",
            b"01",
            b"-",
            b"1.",
            b"1.5e",
            b"1.5e+7",
            b"1E-0",
            b"-1.25e10",
            b"123456789012345678901234567890e999999",
            b"+1",
            b".5",
            b"true",
            b"tru",
            b"nul",
            b"nulll",
            b"false ",
            b"\"\"",
            b"\"a\\\"b\"",
            b"\"\\u12\"",
            b"\"\\u12G4\"",
            b"\"\\ud800\"",
            b"\"\\x\"",
            b"\"tab\there\"",
            b"\"\x7f\"",
            b"\"\xff\xfe\"",
            b"\"unterminated",
            b"[]",
            b"[1,]",
            b"[,1]",
            b"[1 2]",
            b"{}",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{1:2}",
            b"{\"a\":1 \"b\":2}",
            b"{\"a\":[{\"b\":[]}],\"c\":{}}",
            b"[}",
            b"{]",
            b"[[[[]]]]",
            b"[[[[]]]",
            b" \t\r\n[ 1 , { \"k\" : null } ] \n",
            b"",
            b"   ",
            b"x",
            b"[1] [2]",
        ];
        for &input in cases {
            let mut de = serde_json::Deserializer::from_slice(input);
            de.disable_recursion_limit();
            let expected = serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end());
            // At every offset in a block, and across a block's end.
            for shift in 0..=BLOCK {
                let input = [&vec![b' '; shift][..], input].concat();
                assert_eq!(
                    skip(&input).is_ok(),
                    expected.is_ok(),
                    "{:?}: {:?} vs serde {:?}",
                    String::from_utf8_lossy(&input),
                    skip(&input),
                    expected
                );
            }
        }
    }

    /// The walk over tokens against the byte-by-byte grammar (`grammar`), which is what
    /// names errors, on a whole document: both accept or both reject, and
    /// the value ends at the same byte.
    fn agrees_with_bytes(input: &[u8]) -> std::result::Result<(), TestCaseError> {
        let mut reader = Reader::new(input);
        let walked = reader
            .skip_value()
            .map(|()| reader.pos())
            .and_then(|end| reader.end().map(|()| end));
        let mut spill = Vec::new();
        let stepped = grammar::value(input, 0, &mut spill)
            .map(|end| grammar::white(input, end))
            .and_then(|end| match end == input.len() {
                true => Ok(end),
                false => Err((end, "trailing characters")),
            });
        match (&walked, &stepped) {
            (Ok(walked), Ok(stepped)) => prop_assert_eq!(walked, stepped),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(
                false,
                "{:?}: walked {walked:?}, stepped {stepped:?}",
                String::from_utf8_lossy(input)
            ),
        }
        Ok(())
    }

    /// JSON values of every kind with the white space, escapes and numbers
    /// that the tokens must get right, long enough to cross blocks.
    fn value() -> impl Strategy<Value = Vec<u8>> {
        let white = prop::sample::select(vec![&b""[..], b" ", b"\n  ", b"\t"]);
        let text = prop::collection::vec(
            prop::sample::select(vec![
                &b"abc"[..],
                b"\\\"",
                b"\\\\",
                b"\\u00e9",
                b"\\n",
                b"\xc3\xa9",
                b"{}[],:",
                b"long text that runs on",
            ]),
            0..6,
        )
        .prop_map(|pieces| [&b"\""[..], &pieces.concat(), b"\""].concat());
        let scalar = prop_oneof![
            prop::sample::select(vec![
                &b"0"[..],
                b"-1",
                b"12",
                b"3.25e-7",
                b"true",
                b"false",
                b"null",
                b"1234567890123",
            ])
            .prop_map(<[u8]>::to_vec),
            text.clone(),
        ];
        scalar.prop_recursive(6, 64, 6, move |inner| {
            let white = white.clone();
            let member = (text.clone(), white.clone(), inner.clone())
                .prop_map(|(k, w, v)| [k, w.to_vec(), b":".to_vec(), w.to_vec(), v].concat());
            prop_oneof![
                (prop::collection::vec(inner, 0..6), white.clone()).prop_map(|(items, w)| {
                    [
                        &b"["[..],
                        w,
                        &items.join(&[w, b",", w].concat()[..]),
                        w,
                        b"]",
                    ]
                    .concat()
                }),
                (prop::collection::vec(member, 0..6), white).prop_map(|(members, w)| {
                    [
                        &b"{"[..],
                        w,
                        &members.join(&[w, b",", w].concat()[..]),
                        w,
                        b"}",
                    ]
                    .concat()
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn walking_agrees_with_the_bytes(input in value(), shift in 0..=BLOCK) {
            agrees_with_bytes(&[&vec![b' '; shift][..], &input].concat())?;
        }

        #[test]
        fn walking_agrees_with_the_bytes_on_damaged_values(
            input in value().prop_flat_map(|v| damaged(v, b"{}[]\",:\\ \n\x01nt0-e.x")),
            shift in 0..=BLOCK,
        ) {
            agrees_with_bytes(&[&vec![b' '; shift][..], &input].concat())?;
        }
    }

    #[test]
    fn skipping_is_iterative() {
        let depth = 100_000;
        let mut input = "[{\"k\":".repeat(depth).into_bytes();
        input.extend_from_slice(b"null");
        input.extend("}]".repeat(depth).bytes());
        assert_eq!(skip(&input), Ok(()));
        input.pop();
        assert!(skip(&input).is_err());
    }

    /// The open containers are kept 63 to a word under a sentinel bit: closers
    /// must still match their openers on both sides of every word boundary.
    #[test]
    fn closers_match_openers_across_the_stack_words() {
        for depth in [1, 62, 63, 64, 65, 125, 126, 127, 128, 129, 200] {
            let opener = |i: usize| if i.is_multiple_of(3) { "[" } else { "{\"k\":" };
            let closer = |i: usize| if i.is_multiple_of(3) { "]" } else { "}" };
            let mut input: String = (0..depth).map(opener).collect();
            input.push('0');
            input.extend((0..depth).rev().map(closer));
            assert_eq!(skip(input.as_bytes()), Ok(()), "depth {depth}");
            for wrong in [depth - 1, depth / 2, 0] {
                // The closer at `wrong` levels from the outside, of the other kind.
                let at = input.len() - 1 - wrong;
                let mut bad = input.clone().into_bytes();
                bad[at] = if bad[at] == b']' { b'}' } else { b']' };
                assert!(skip(&bad).is_err(), "depth {depth}, closer {wrong}");
            }
        }
    }
}
