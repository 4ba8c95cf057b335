//! A small deterministic RNG (SplitMix64). No dependency, identical streams on every platform, so a
//! failing case is reproduced from the seed printed in its report.

/// SplitMix64: a 64-bit state advanced by a constant and scrambled. Good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    /// The second value of the last Box–Muller pair.
    spare: Option<f64>,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed ^ 0x6A09_E667_F3BC_C909, spare: None }
    }

    /// A generator for one element of a family of streams (row `i` of tensor `tag` of a case), so a
    /// row's contents depend on its identity only, never on the batch it is generated in.
    pub fn keyed(seed: u64, tag: u64, i: u64) -> Self {
        let mut r = Rng::new(seed);
        let a = r.next_u64() ^ tag.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut r = Rng::new(a);
        let b = r.next_u64() ^ i.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Rng::new(b)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (`n > 0`; the modulo bias is irrelevant for test data).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Standard normal (Box–Muller; both values of a pair are used).
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return v;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        self.spare = Some(r * s);
        r * c
    }
}
