//! Similarity of keyword sets and of embeddings.

/// Number of hashes present in both sorted, distinct slices (a linear merge).
pub fn intersection_len(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Token-overlap F1 of two keyword sets: the harmonic mean of precision
/// (shared / |b|) and recall (shared / |a|), i.e. `2·shared / (|a| + |b|)`.
/// The Evolve Agent design (ARCHITECTURE.md § Sources): a memory whose F1 against the query is ≥ 0.7 is a strong match.
pub fn f1(a: &[u64], b: &[u64]) -> f32 {
    let total = a.len() + b.len();
    if total == 0 {
        return 0.0;
    }
    (2 * intersection_len(a, b)) as f32 / total as f32
}

/// Jaccard coefficient |a ∩ b| / |a ∪ b| of two keyword sets (0 when both are empty).
pub fn jaccard(a: &[u64], b: &[u64]) -> f32 {
    let shared = intersection_len(a, b);
    let union = a.len() + b.len() - shared;
    if union == 0 {
        return 0.0;
    }
    shared as f32 / union as f32
}

/// Cosine similarity of two embeddings; 0 when either is zero or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 || !na.is_finite() || !nb.is_finite() {
        return 0.0;
    }
    (dot / sqrt(na * nb)) as f32
}

/// Square root by Newton's method (`f64::sqrt` needs `std`; the core is `no_std`).
pub(crate) fn sqrt(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    // Halving the exponent gives a guess within a factor of two.
    let mut r = f64::from_bits((x.to_bits() >> 1) + (0x3ff0_0000_0000_0000 >> 1));
    for _ in 0..6 {
        r = 0.5 * (r + x / r);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f1_and_jaccard_follow_their_definitions() {
        let a = [1, 2, 3, 4];
        let b = [3, 4, 5, 6];
        assert_eq!(intersection_len(&a, &b), 2);
        assert!((f1(&a, &b) - 0.5).abs() < 1e-6);
        assert!((jaccard(&a, &b) - 2.0 / 6.0).abs() < 1e-6);
        assert_eq!(f1(&[], &[]), 0.0);
        assert_eq!(jaccard(&[], &[]), 0.0);
        assert_eq!(f1(&a, &a), 1.0);
        assert_eq!(jaccard(&a, &a), 1.0);
    }

    #[test]
    fn cosine_of_parallel_orthogonal_and_degenerate_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - 0.707_106_77).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn newton_sqrt_is_exact_enough() {
        for x in [1e-9, 0.25, 2.0, 9.0, 12345.678, 1e12] {
            let r = sqrt(x);
            assert!((r * r - x).abs() <= x * 1e-12, "{x}");
        }
    }
}
