//! The mutator: byte-level edits biased towards what breaks parsers of text formats
//! (delimiters, quotes, escapes, NULs, huge numbers, cut-offs), plus splicing two seeds.

/// xorshift64*: fast, seeded, good enough to pick edits.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next value.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\n",
    b"\r\n",
    b" ",
    b"(",
    b")",
    b")) ",
    b"\"",
    b"\\",
    b"\\u0000",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b"=",
    b",",
    b"-",
    b"--",
    b"18446744073709551616",
    b"-1",
    b"4294967296",
    b"NaN",
    b"null",
    b"\xff\xfe",
    b"\xe2\x80\x8b",
    b"\xf0\x9f\x92\xa9",
    b"%s%n",
    b"../../",
    b"@",
    b"#",
];

/// One mutant of `base` (sometimes spliced with `other`): 1–8 edits.
pub fn mutate(base: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..=rng.below(8) {
        edit(&mut v, other, rng);
    }
    v.truncate(1 << 20);
    v
}

fn edit(v: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    let at = rng.below(v.len() + 1);
    match rng.below(8) {
        0 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] ^= 1 << rng.below(8);
        }
        1 => {
            let s = INTERESTING[rng.below(INTERESTING.len())];
            v.splice(at..at, s.iter().copied());
        }
        2 if !v.is_empty() => {
            let end = (at + rng.below(16) + 1).min(v.len());
            let at = at.min(end);
            v.drain(at..end);
        }
        3 if !v.is_empty() => {
            // Duplicate a chunk (long lines, repeated fields).
            let start = rng.below(v.len());
            let end = (start + rng.below(64) + 1).min(v.len());
            let chunk: Vec<u8> = v[start..end].to_vec();
            for _ in 0..=rng.below(4) {
                v.splice(at..at, chunk.iter().copied());
            }
        }
        4 if !other.is_empty() => {
            // Splice: our head with the other's tail.
            let cut = rng.below(other.len());
            v.truncate(at);
            v.extend_from_slice(&other[cut..]);
        }
        5 => v.truncate(at),
        6 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] = (rng.next() & 0xff) as u8;
        }
        _ => {
            let n = rng.below(8) + 1;
            let bytes: Vec<u8> = (0..n).map(|_| b' ' + (rng.next() % 95) as u8).collect();
            v.splice(at..at, bytes);
        }
    }
}
