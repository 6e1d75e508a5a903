//! The grammar byte by byte. The reader's walk over tokens notices that
//! input is not JSON; this is what finds the first error and names it. It
//! also holds the scans that the reader runs on single values: the plain
//! run of a string that is read, numbers, literals.
//!
//! The position is passed by value and the stack of open containers is a
//! bit set in a register; only nesting deeper than 63 spills words to
//! `spill`. Errors are `(offset, reason)` pairs, turned into `json::Error`
//! by the caller.

pub type Skip = Result<usize, (usize, &'static str)>;

const ONES: u64 = u64::MAX / 255;
const HIGH_BITS: u64 = ONES << 7;

/// The high bit of each byte of `word` that is a quote, and of each that is
/// a backslash or a control character (or, with `ASCII`, any byte above
/// 0x7f). The lowest bit of the two together marks the first such byte;
/// bits above it may be false.
#[inline(always)]
fn stops<const ASCII: bool>(word: u64) -> (u64, u64) {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    let high = if ASCII { word } else { 0 };
    (quote & HIGH_BITS, (control | backslash | high) & HIGH_BITS)
}

/// Where a run of plain string bytes from `pos` ends, and whether a quote
/// ends it, known without reading that byte again. With `ASCII`, a byte
/// above 0x7f ends the run too.
#[inline(always)]
fn plain_run<const ASCII: bool>(input: &[u8], mut pos: usize) -> (usize, bool) {
    while let Some(chunk) = input.get(pos..).and_then(<[u8]>::first_chunk::<8>) {
        let (quote, other) = stops::<ASCII>(u64::from_le_bytes(*chunk));
        let hits = quote | other;
        if hits != 0 {
            // No false bit lies below a true one, so the lowest is exact.
            let first = hits & hits.wrapping_neg();
            return (pos + hits.trailing_zeros() as usize / 8, first & quote != 0);
        }
        pos += 8;
    }
    while let Some(&b) = input.get(pos) {
        if b == b'"' || b == b'\\' || b < 0x20 || (ASCII && b > 0x7f) {
            return (pos, b == b'"');
        }
        pos += 1;
    }
    (pos, false)
}

/// The first quote, backslash or control character at or after `pos`, or
/// the end of the input.
#[inline(always)]
pub fn plain_end(input: &[u8], pos: usize) -> usize {
    plain_run::<false>(input, pos).0
}

/// Where a run of plain ASCII string bytes from `pos` ends, and whether its
/// closing quote ends it: nearly every key and name is such a run, which can
/// be borrowed without a UTF-8 check.
#[inline(always)]
pub fn ascii_run(input: &[u8], pos: usize) -> (usize, bool) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if let Some(chunk) = input.get(pos..).and_then(<[u8]>::first_chunk::<16>) {
        use core::arch::wasm32::*;
        // SAFETY: the chunk holds 16 bytes, and a v128 load needs no alignment.
        let v = unsafe { v128_load(chunk.as_ptr().cast()) };
        let quote = u8x16_bitmask(u8x16_eq(v, u8x16_splat(b'"')));
        // Backslashes, control characters and bytes above 0x7f.
        let other = v128_or(
            u8x16_eq(v, u8x16_splat(b'\\')),
            u8x16_ge(u8x16_sub(v, u8x16_splat(0x20)), u8x16_splat(0x60)),
        );
        let hits = quote | u8x16_bitmask(other);
        if hits != 0 {
            let at = hits.trailing_zeros();
            return (pos + at as usize, quote >> at & 1 != 0);
        }
        return plain_run::<true>(input, pos + 16);
    }
    plain_run::<true>(input, pos)
}

pub fn white(input: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = input.get(pos) {
        pos += 1;
    }
    pos
}

/// Skips the rest of a string whose opening quote is before `pos`; escapes
/// are checked for form only and bytes are not checked for UTF-8, as
/// serde_json ignores a string.
pub fn string(input: &[u8], mut pos: usize) -> Skip {
    loop {
        let (end, quote) = plain_run::<false>(input, pos);
        pos = end;
        if quote {
            return Ok(pos + 1);
        }
        match input.get(pos) {
            Some(b'"') => return Ok(pos + 1),
            Some(b'\\') => pos = escape(input, pos + 1)?,
            Some(_) => return Err((pos, "control character in a string")),
            None => return Err((pos, "unexpected end of input in a string")),
        }
    }
}

/// The escape after a backslash.
fn escape(input: &[u8], pos: usize) -> Skip {
    match input.get(pos) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(pos + 1),
        Some(b'u') => hex4(input, pos + 1),
        Some(_) => Err((pos, "invalid escape in a string")),
        None => Err((pos, "unexpected end of input in a string")),
    }
}

fn hex4(input: &[u8], pos: usize) -> Skip {
    match input.get(pos..).and_then(<[u8]>::first_chunk::<4>) {
        Some(digits) if digits.iter().all(u8::is_ascii_hexdigit) => Ok(pos + 4),
        Some(_) => Err((pos, "invalid \\u escape")),
        None => Err((input.len(), "unexpected end of input in a \\u escape")),
    }
}

fn digits(input: &[u8], mut pos: usize) -> usize {
    while input.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    pos
}

pub fn number(input: &[u8], mut pos: usize) -> Skip {
    if input.get(pos) == Some(&b'-') {
        pos += 1;
    }
    match input.get(pos) {
        Some(b'0') => {
            pos += 1;
            if input.get(pos).is_some_and(u8::is_ascii_digit) {
                return Err((pos, "invalid number: leading zero"));
            }
        }
        Some(b'1'..=b'9') => pos = digits(input, pos + 1),
        _ => return Err((pos, "invalid number")),
    }
    if input.get(pos) == Some(&b'.') {
        let end = digits(input, pos + 1);
        if end == pos + 1 {
            return Err((end, "invalid number: no digit after `.`"));
        }
        pos = end;
    }
    if let Some(b'e' | b'E') = input.get(pos) {
        pos += 1;
        if let Some(b'+' | b'-') = input.get(pos) {
            pos += 1;
        }
        let end = digits(input, pos);
        if end == pos {
            return Err((end, "invalid number: no digit in the exponent"));
        }
        pos = end;
    }
    Ok(pos)
}

fn literal(input: &[u8], mut pos: usize, word: &'static [u8]) -> Skip {
    for &expected in word {
        match input.get(pos) {
            Some(&b) if b == expected => pos += 1,
            Some(_) => return Err((pos, "invalid literal")),
            None => return Err((pos, "unexpected end of input in a literal")),
        }
    }
    Ok(pos)
}

/// A member's key and colon; `pos` is where the key must start.
fn key(input: &[u8], pos: usize, missing: &'static str) -> Skip {
    match input.get(pos) {
        Some(b'"') => {}
        Some(_) => return Err((pos, missing)),
        None => return Err((pos, "unexpected end of input in an object")),
    }
    let pos = white(input, string(input, pos + 1)?);
    match input.get(pos) {
        Some(b':') => Ok(pos + 1),
        Some(_) => Err((pos, "expected `:` after an object key")),
        None => Err((pos, "unexpected end of input in an object")),
    }
}

/// A member up to its value, and the value too when it is a string or `{}`
/// (most of `managedFields`): `true` when the value has been skipped.
fn member(
    input: &[u8],
    pos: usize,
    missing: &'static str,
) -> Result<(usize, bool), (usize, &'static str)> {
    let pos = key(input, pos, missing)?;
    match input.get(pos) {
        Some(b'"') => Ok((string(input, pos + 1)?, true)),
        Some(b'{') if input.get(pos + 1) == Some(&b'}') => Ok((pos + 2, true)),
        _ => Ok((pos, false)),
    }
}

/// Skips one value of any kind and depth that starts at or after `pos`
/// (white space first), and returns where it ends.
pub fn value(input: &[u8], mut pos: usize, spill: &mut Vec<u64>) -> Skip {
    spill.clear();
    // Bit 0 is the innermost open container, set for an object; the highest
    // set bit is a sentinel, so `open == 1` means no container is open.
    let mut open: u64 = 1;
    loop {
        pos = white(input, pos);
        match input.get(pos) {
            Some(b'"') => pos = string(input, pos + 1)?,
            Some(&open_byte @ (b'{' | b'[')) => {
                let object = open_byte == b'{';
                pos = white(input, pos + 1);
                if input.get(pos) == Some(if object { &b'}' } else { &b']' }) {
                    pos += 1;
                } else {
                    if open >> 63 != 0 {
                        spill.push(open);
                        open = 1;
                    }
                    open = open << 1 | u64::from(object);
                    if !object {
                        continue;
                    }
                    let (end, skipped) = member(input, pos, "expected a string key")?;
                    pos = end;
                    if !skipped {
                        continue;
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => pos = number(input, pos)?,
            Some(b'n') => pos = literal(input, pos, b"null")?,
            Some(b't') => pos = literal(input, pos, b"true")?,
            Some(b'f') => pos = literal(input, pos, b"false")?,
            Some(_) => return Err((pos, "expected a value")),
            None => return Err((pos, "unexpected end of input where a value was expected")),
        }
        // A value has ended: close containers until one goes on.
        loop {
            if open == 1 {
                match spill.pop() {
                    Some(word) => open = word,
                    None => return Ok(pos),
                }
            }
            let object = open & 1 != 0;
            pos = white(input, pos);
            match input.get(pos) {
                Some(b',') => {
                    pos += 1;
                    if !object {
                        break;
                    }
                    let missing = "expected a string key after `,`";
                    let (end, skipped) = member(input, white(input, pos), missing)?;
                    pos = end;
                    if skipped {
                        continue;
                    }
                    break;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                Some(_) if object => {
                    return Err((pos, "expected `,` or `}` after an object member"));
                }
                Some(_) => return Err((pos, "expected `,` or `]` after an array element")),
                None => return Err((pos, "unexpected end of input in a container")),
            }
            pos += 1;
            open >>= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_finds_every_stop_byte_at_every_offset() {
        for stop in [b'"', b'\\', 0x00, 0x1f] {
            for len in 0..40 {
                let mut input = vec![b'a'; len];
                input.push(stop);
                input.extend_from_slice(b"tail");
                assert_eq!(
                    plain_end(&input, 0),
                    len,
                    "stop {stop:#x} after {len} bytes"
                );
            }
        }
        // Bytes at or above 0x80 and 0x20..0x7f are never stops.
        let plain: Vec<u8> = (0x20u8..=0xff)
            .filter(|&b| b != b'"' && b != b'\\')
            .collect();
        assert_eq!(plain_end(&plain, 0), plain.len());
    }
}
