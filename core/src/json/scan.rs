//! Where the tokens of the input start, found 64 bytes at a time: the first
//! stage of reading. Each block becomes bit masks, one bit per byte, of its
//! quotes (and, where it holds any, of its white space, backslashes and
//! control characters). Escapes and the extent of strings follow from a few
//! operations on words, and what is left are the tokens: the opening quote
//! of each string, and every byte outside strings that is not white space
//! (structural characters, and each byte of a number or literal). This is
//! the module's SIMD code: on wasm32 the masks come from simd128 compares
//! (`mod simd`); elsewhere a plain loop computes the same masks (`mod
//! plain`), so that the native tests exercise everything around them.
//!
//! Strings are checked here as serde_json checks a string it ignores: no
//! control character, and only valid escapes. The masks stop at the first
//! block where that fails, or at the end of a string that never closes: the
//! input is then not JSON, and the reader leaves it to `grammar` to say why.

pub const BLOCK: usize = 64;

/// Bits at even positions, and at odd ones.
const EVEN: u64 = 0x5555_5555_5555_5555;
const ODD: u64 = !EVEN;

/// Bit `i` of each mask says what byte `i` of a block is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Classes {
    pub quote: u64,
    /// Space, tab, line feed and carriage return.
    pub white: u64,
    pub backslash: u64,
    /// Bytes below 0x20, never allowed raw in a string.
    pub control: u64,
    /// What may follow a backslash: `" \ / b f n r t u`.
    pub escapable: u64,
    pub u: u64,
}

/// Classifies a block. White space, backslashes and control characters
/// are rare in what the API server sends, so only quotes are always looked
/// for; the rest only in a block that holds a byte up to 0x20 or a
/// backslash, or whose first byte a backslash escapes (`escaped_in`).
#[inline(always)]
pub fn classify(block: &[u8; BLOCK], escaped_in: bool) -> Classes {
    let (quote, rare) = masks::quotes(block);
    if rare || escaped_in {
        Classes {
            quote,
            ..masks::rare(block)
        }
    } else {
        Classes {
            quote,
            ..Classes::default()
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use plain as masks;
/// The module's masks, from `simd`; native builds take `plain`'s.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use simd as masks;

/// The masks, 16 bytes at a time with WebAssembly's SIMD instructions
/// (simd128): four lanes of 16 bytes a block.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use core::arch::wasm32::*;

    use super::{BLOCK, Classes};

    #[inline(always)]
    fn load(block: &[u8; BLOCK], lane: usize) -> v128 {
        debug_assert!(lane < BLOCK / 16);
        // SAFETY: the 16 bytes of `lane` lie inside the block, and a v128
        // load needs no alignment.
        unsafe { v128_load(block.as_ptr().add(16 * lane).cast()) }
    }

    #[inline(always)]
    fn bits(mask: v128, lane: usize) -> u64 {
        u64::from(u8x16_bitmask(mask)) << (16 * lane)
    }

    /// Quote bits of one lane, and a vector that is not all zeros where the
    /// lane holds a byte up to 0x20 or a backslash.
    #[inline(always)]
    fn lane(block: &[u8; BLOCK], lane: usize) -> (u64, v128) {
        let v = load(block, lane);
        let quote = u8x16_eq(v, u8x16_splat(b'"'));
        // Zero for bytes above 0x20.
        let low = u8x16_sub_sat(u8x16_splat(0x21), v);
        let rare = v128_or(low, u8x16_eq(v, u8x16_splat(b'\\')));
        (bits(quote, lane), rare)
    }

    #[inline(always)]
    pub fn quotes(block: &[u8; BLOCK]) -> (u64, bool) {
        let (q0, r0) = lane(block, 0);
        let (q1, r1) = lane(block, 1);
        let (q2, r2) = lane(block, 2);
        let (q3, r3) = lane(block, 3);
        let rare = v128_or(v128_or(r0, r1), v128_or(r2, r3));
        (q0 | q1 | q2 | q3, v128_any_true(rare))
    }

    /// White space, backslashes, control characters and what may follow a
    /// backslash; quotes are left to the caller.
    #[inline(never)]
    pub fn rare(block: &[u8; BLOCK]) -> Classes {
        // Indexed by a byte below 16: all ones for \t, \n and \r (a swizzle
        // gives 0 for larger indices, so the space is compared apart).
        const WHITE_BELOW_16: v128 = u8x16(0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 0, 0, 255, 0, 0);
        // Bytes that may follow a backslash, looked up by their two halves:
        // a bit per high half (2, 5, 6, 7), set for the low halves that go
        // with it (`" /`, `\\`, `b f n`, `r t u`).
        const BY_HIGH: v128 = u8x16(0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0);
        const BY_LOW: v128 = u8x16(0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1);
        let mut c = Classes::default();
        for lane in 0..BLOCK / 16 {
            let v = load(block, lane);
            let space = u8x16_eq(v, u8x16_splat(b' '));
            c.white |= bits(v128_or(i8x16_swizzle(WHITE_BELOW_16, v), space), lane);
            c.backslash |= bits(u8x16_eq(v, u8x16_splat(b'\\')), lane);
            c.control |= bits(u8x16_lt(v, u8x16_splat(0x20)), lane);
            let high = i8x16_swizzle(BY_HIGH, u8x16_shr(v, 4));
            let low = i8x16_swizzle(BY_LOW, v128_and(v, u8x16_splat(0x0f)));
            let none = u8x16_eq(v128_and(high, low), u8x16_splat(0));
            c.escapable |= !bits(none, lane) & (0xffff << (16 * lane));
            c.u |= bits(u8x16_eq(v, u8x16_splat(b'u')), lane);
        }
        c
    }
}

/// The same masks, a byte at a time, where WebAssembly's SIMD is not
/// available (the native tests). `tests/simd.rs` holds the two to the same
/// answers.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod plain {
    use super::{BLOCK, Classes};

    pub fn quotes(block: &[u8; BLOCK]) -> (u64, bool) {
        let mut quote = 0;
        let mut rare = false;
        for (i, &b) in block.iter().enumerate() {
            quote |= u64::from(b == b'"') << i;
            rare |= b <= 0x20 || b == b'\\';
        }
        (quote, rare)
    }

    pub fn rare(block: &[u8; BLOCK]) -> Classes {
        let mut c = Classes::default();
        for (i, &b) in block.iter().enumerate() {
            let escapable = matches!(
                b,
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'
            );
            c.white |= u64::from(matches!(b, b' ' | b'\t' | b'\n' | b'\r')) << i;
            c.backslash |= u64::from(b == b'\\') << i;
            c.control |= u64::from(b < 0x20) << i;
            c.escapable |= u64::from(escapable) << i;
            c.u |= u64::from(b == b'u') << i;
        }
        c
    }
}

/// The bytes of a block that a backslash escapes, from its backslashes and
/// whether its first byte is escaped by a run that ended the previous block;
/// and whether the next block's first byte is (0 or 1). Backslashes that
/// the one before them escapes, inside a run, are left out: they need no
/// check, and are no quote.
///
/// In a run of backslashes, the first escapes the second, the third the
/// fourth, and so on: the byte after the run is escaped exactly when the run
/// is odd in length, that is when the run's first backslash and the byte
/// after it sit at positions of different parity. Adding a run's lowest bit
/// to the run carries through it and lands on the byte after it.
#[inline(always)]
pub fn escapes(backslash: u64, first_escaped: u64) -> (u64, u64) {
    if backslash == 0 {
        return (first_escaped, 0);
    }
    // An escaped backslash is an ordinary byte: it starts no run.
    let runs = backslash & !first_escaped;
    let starts = runs & !(runs << 1);
    let after_even_starts = runs.wrapping_add(starts & EVEN) & !runs;
    let (sum, carried) = runs.overflowing_add(starts & ODD);
    let after_odd_starts = sum & !runs;
    let escaped = (after_even_starts & ODD) | (after_odd_starts & EVEN) | first_escaped;
    // Only a run that starts at an odd position and fills the block to its
    // end carries out, and its length is then odd.
    (escaped, u64::from(carried))
}

/// Bit `i` is the parity of bits `0..=i`: with the unescaped quotes, it
/// marks each string from its opening quote up to, not including, its
/// closing one.
#[inline(always)]
pub fn prefix_xor(mut bits: u64) -> u64 {
    bits ^= bits << 1;
    bits ^= bits << 2;
    bits ^= bits << 4;
    bits ^= bits << 8;
    bits ^= bits << 16;
    bits ^= bits << 32;
    bits
}

/// Whether each `u` escaped in the block at `base` (bits of `escaped_u`)
/// is followed by four hex digits.
#[inline(never)]
fn hex_follows(input: &[u8], base: usize, mut escaped_u: u64) -> bool {
    while escaped_u != 0 {
        let at = base + escaped_u.trailing_zeros() as usize + 1;
        let digits = input.get(at..).and_then(<[u8]>::first_chunk::<4>);
        if !digits.is_some_and(|d| d.iter().all(u8::is_ascii_hexdigit)) {
            return false;
        }
        escaped_u &= escaped_u - 1;
    }
    true
}

/// Token masks of the input's 64-byte blocks, in order: bit `i` of mask `b`
/// is set when a token starts at byte `64 * b + i`. `complete` is false when
/// the masks stop short of the end of the input, at a malformed string.
pub struct Tokens {
    pub masks: Vec<u64>,
    pub complete: bool,
}

/// Finds the tokens of the whole input.
pub fn tokens(input: &[u8]) -> Tokens {
    let mut masks = Vec::with_capacity(input.len().div_ceil(BLOCK));
    let mut carry = Carry::default();
    let mut blocks = input.chunks_exact(BLOCK);
    for (i, block) in (&mut blocks).enumerate() {
        let block = block.try_into().expect("chunks of BLOCK bytes");
        match carry.tokens(input, i * BLOCK, block) {
            Some(mask) => masks.push(mask),
            None => {
                return Tokens {
                    masks,
                    complete: false,
                };
            }
        }
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // White space past the end holds no token.
        let mut padded = [b' '; BLOCK];
        padded[..rest.len()].copy_from_slice(rest);
        match carry.tokens(input, input.len() - rest.len(), &padded) {
            Some(mask) => masks.push(mask),
            None => {
                return Tokens {
                    masks,
                    complete: false,
                };
            }
        }
    }
    Tokens {
        masks,
        complete: carry.in_string == 0,
    }
}

/// What one block passes on to the next.
#[derive(Default)]
struct Carry {
    /// All ones when the next block starts inside a string.
    in_string: u64,
    /// 1 when the next block's first byte is escaped.
    escaped: u64,
}

impl Carry {
    /// The token mask of `block`, the input's block at `base`; `None` where
    /// a string in it holds a control character or a bad escape.
    #[inline(always)]
    fn tokens(&mut self, input: &[u8], base: usize, block: &[u8; BLOCK]) -> Option<u64> {
        let c = classify(block, self.escaped != 0);
        let (escaped, carry) = escapes(c.backslash, self.escaped);
        let quotes = c.quote & !escaped;
        let inside = prefix_xor(quotes) ^ self.in_string;
        // A backslash outside a string is an error the reader will meet.
        let escaped = escaped & inside;
        if c.control & inside != 0
            || escaped & !c.escapable != 0
            || (escaped & c.u != 0 && !hex_follows(input, base, escaped & c.u))
        {
            return None;
        }
        self.escaped = carry;
        self.in_string = ((inside as i64) >> 63) as u64;
        // Opening quotes are inside and quotes, closing ones neither.
        Some(!c.white & !(inside ^ quotes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Which bytes are escaped, byte by byte: those right after a
    /// backslash that is not itself escaped.
    fn escaped_bytes(bytes: &[u8], first_escaped: bool) -> Vec<bool> {
        let mut escaped = vec![false; bytes.len() + 1];
        escaped[0] = first_escaped;
        for (i, &b) in bytes.iter().enumerate() {
            escaped[i + 1] = b == b'\\' && !escaped[i];
        }
        escaped
    }

    fn check_escapes(backslash: u64, first_escaped: bool) {
        let bytes: Vec<u8> = (0..64)
            .map(|i| if backslash >> i & 1 != 0 { b'\\' } else { b'a' })
            .collect();
        let expected = escaped_bytes(&bytes, first_escaped);
        // Backslashes inside a run are left out, but for the first byte.
        let reported = |i: usize| expected[i] && (bytes[i] != b'\\' || i == 0);
        let mask = (0..64).fold(0u64, |m, i| m | u64::from(reported(i)) << i);
        assert_eq!(
            escapes(backslash, u64::from(first_escaped)),
            (mask, u64::from(expected[64])),
            "backslashes {backslash:#066b}, first escaped: {first_escaped}"
        );
    }

    /// Every pattern of 12 bytes, at the start, the middle and the end of
    /// the block, where runs carry in and out.
    #[test]
    fn escapes_follow_backslash_runs_exhaustively() {
        for pattern in 0u64..1 << 12 {
            for shift in [0, 26, 52] {
                for first_escaped in [false, true] {
                    check_escapes(pattern << shift, first_escaped);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn escapes_follow_backslash_runs(backslash in any::<u64>(), first in any::<bool>()) {
            check_escapes(backslash, first);
        }

        #[test]
        fn prefix_xor_is_the_running_parity(bits in any::<u64>()) {
            let mut parity = 0;
            let mut expected = 0u64;
            for i in 0..64 {
                parity ^= bits >> i & 1;
                expected |= parity << i;
            }
            prop_assert_eq!(prefix_xor(bits), expected);
        }
    }

    /// The tokens and the first malformed string, byte by byte. As in the
    /// masks, a backslash escapes the next byte wherever it stands (outside
    /// a string it is an error that the reader meets as a token), and the
    /// last block is padded with spaces.
    fn reference_tokens(input: &[u8]) -> (Vec<u64>, bool) {
        let mut masks = vec![0u64; input.len().div_ceil(BLOCK)];
        let (mut in_string, mut escaped) = (false, false);
        for i in 0..masks.len() * BLOCK {
            let b = input.get(i).copied().unwrap_or(b' ');
            let token = &mut masks[i / BLOCK];
            let bit = 1 << (i % BLOCK);
            let malformed = if std::mem::take(&mut escaped) {
                let valid = match b {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => true,
                    b'u' => input
                        .get(i + 1..i + 5)
                        .is_some_and(|d| d.iter().all(u8::is_ascii_hexdigit)),
                    _ => false,
                };
                if !in_string && !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    *token |= bit;
                }
                in_string && !valid
            } else if b == b'\\' {
                escaped = true;
                if !in_string {
                    *token |= bit;
                }
                false
            } else if b == b'"' {
                if !in_string {
                    *token |= bit;
                }
                in_string = !in_string;
                false
            } else if in_string {
                b < 0x20
            } else {
                if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    *token |= bit;
                }
                false
            };
            if malformed {
                masks.truncate(i / BLOCK);
                return (masks, false);
            }
        }
        (masks, !in_string)
    }

    fn check_tokens(input: &[u8]) -> Result<(), TestCaseError> {
        let Tokens { masks, complete } = tokens(input);
        let (expected, expected_complete) = reference_tokens(input);
        prop_assert_eq!(&masks, &expected, "{:?}", String::from_utf8_lossy(input));
        prop_assert_eq!(complete, expected_complete);
        Ok(())
    }

    /// Text dense in what the masks must get right: quotes, runs of
    /// backslashes, escapes of every kind, control characters, white space.
    fn dense() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(&b"\""[..]),
            Just(&b"\\"[..]),
            Just(&b"\\\\"[..]),
            Just(&b"\\\""[..]),
            Just(&b"\\u00e9"[..]),
            Just(&b"\\u12"[..]),
            Just(&b"\\n"[..]),
            Just(&b"\\x"[..]),
            Just(&b" "[..]),
            Just(&b"\n"[..]),
            Just(&b"\x01"[..]),
            Just(&b"{}[]:,"[..]),
            Just(&b"abc"[..]),
            Just(&b"12"[..]),
            Just(&b"\xc3\xa9"[..]),
        ];
        prop::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn tokens_agree_with_a_byte_by_byte_scan(input in dense()) {
            check_tokens(&input)?;
        }

        #[test]
        fn tokens_agree_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..200)) {
            check_tokens(&input)?;
        }
    }

    /// Long strings whose escapes straddle the block boundaries, at every
    /// offset.
    #[test]
    fn tokens_carry_escapes_and_strings_across_blocks() {
        for body in [&b"\\\\"[..], b"\\\"", b"\\\\\\\"", b"\\u00e9", b"x"] {
            for offset in 0..2 * BLOCK {
                let mut input = vec![b' '; offset];
                input.push(b'"');
                for _ in 0..50 {
                    input.extend_from_slice(body);
                }
                input.extend_from_slice(b"\" , 1");
                check_tokens(&input).unwrap();
            }
        }
    }
}
