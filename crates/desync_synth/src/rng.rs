//! Deterministic randomness without a dependency.
//!
//! Role: every random choice of the generator comes from here, so one seed
//! gives byte-identical dump sets on any machine and thread count.
//! Invariants: [`Rng`] is a sequential xorshift64* stream (used where order is
//! fixed: building the plan); [`mix`] is a stateless hash of `(seed, keys)`
//! used for per-rank / per-op values, so a rank can be generated alone, in
//! any order, without replaying other ranks' streams.

/// xorshift64* (Vigna): tiny, fast, good enough for synthetic data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Self {
        // xorshift must not start at 0; splitmix the seed first.
        Rng(splitmix(seed) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`; 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for n far below 2^64.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Index into `weights` with probability proportional to the weight;
    /// `None` when all weights are zero.
    pub fn weighted(&mut self, weights: &[u32]) -> Option<usize> {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        if total == 0 {
            return None;
        }
        let mut pick = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if pick < u64::from(w) {
                return Some(i);
            }
            pick -= u64::from(w);
        }
        None
    }
}

/// The `SplitMix64` finalizer: a bijective 64-bit mixer.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Stateless hash of a seed and some keys, e.g. `mix(seed, &[RANK, r, g])`.
pub fn mix(seed: u64, keys: &[u64]) -> u64 {
    keys.iter().fold(splitmix(seed), |h, &k| splitmix(h ^ k))
}

/// `mix` reduced to `lo..=hi`.
pub fn mix_range(seed: u64, keys: &[u64], lo: u64, hi: u64) -> u64 {
    let span = hi.saturating_sub(lo).saturating_add(1);
    lo + ((u128::from(mix(seed, keys)) * u128::from(span)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_spread() {
        let a: Vec<u64> = (0..5).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut r = Rng::new(0);
        let mut hist = [0u32; 4];
        for _ in 0..4000 {
            hist[r.below(4) as usize] += 1;
        }
        assert!(hist.iter().all(|&h| (800..1200).contains(&h)), "{hist:?}");
        assert_eq!(r.weighted(&[0, 0]), None);
        assert_eq!(r.weighted(&[0, 5, 0]), Some(1));
        assert!((0..100).all(|_| (3..=5).contains(&r.range(3, 5))));
        assert_ne!(mix(1, &[2, 3]), mix(1, &[3, 2]));
        assert!((0..100).all(|k| (10..=20).contains(&mix_range(9, &[k], 10, 20))));
    }
}
