//! Equality of short byte strings, a word at a time. The module's own
//! `memcmp` (what `==` on slices calls in WebAssembly) goes byte by byte,
//! and keys, settings and annotation names are compared on every call.

/// Whether `a` and `b` hold the same bytes.
#[inline(always)]
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    let word = |s: &[u8], at: usize| s[at..].first_chunk().map(|w| u64::from_le_bytes(*w));
    let half = |s: &[u8], at: usize| s[at..].first_chunk().map(|w| u32::from_le_bytes(*w));
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 4 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    if n < 8 {
        // Two words that overlap when `n` is under 8.
        return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
    }
    let mut at = 0;
    while at + 8 < n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, n - 8) == word(b, n - 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to 40, with a difference at every position.
    #[test]
    fn equal_agrees_with_slice_equality() {
        for len in 0..40 {
            let a: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(equal(&a, &a.clone()), "len {len}");
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!equal(&a, &b), "len {len}, differing at {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!equal(&a, &longer) && !equal(&longer, &a), "len {len}");
        }
    }
}
