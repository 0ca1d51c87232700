//! The token budget of one request.

use serde::{Deserialize, Serialize};

/// The token budget of one model request.
///
/// **Two different numbers — do not confuse them.** `context_window` is the model's
/// whole window (prompt *and* answer, e.g. 32 768); `reserved_output` is the part kept
/// free for the answer (the request's `max_tokens`, e.g. 4 096). The history may only
/// fill the difference, [`Budget::input_budget`]. Passing the window where the input
/// budget is expected (a bug seen in peers) lets the prompt eat the answer's room and
/// the host then fails or cuts the answer short.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The model's whole context window in tokens (prompt + answer).
    pub context_window: usize,
    /// Tokens kept free for the answer (the request's `max_tokens`).
    pub reserved_output: usize,
}

impl Budget {
    /// Tokens the built history may use: `context_window − reserved_output`, 0 when
    /// the reservation is larger than the window.
    pub fn input_budget(&self) -> usize {
        self.context_window.saturating_sub(self.reserved_output)
    }

    /// The estimate above which trimming starts, and down to which it trims:
    /// `trim_threshold` (0.8) × the input budget, rounded down. A threshold outside
    /// 0..=1 is clamped; a NaN one counts as 1 (trim only what does not fit).
    pub fn trim_target(&self, trim_threshold: f32) -> usize {
        let t = if trim_threshold.is_nan() {
            1.0
        } else {
            trim_threshold.clamp(0.0, 1.0)
        };
        let target = (self.input_budget() as f64 * f64::from(t)) as usize;
        target.min(self.input_budget())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_budget_is_window_minus_reserved_output() {
        // (window, reserved, input budget, 80% target)
        for (w, r, input, target) in [
            (32_768, 4_096, 28_672, 22_937),
            (8_192, 0, 8_192, 6_553),
            (4_096, 4_096, 0, 0),
            (1_000, 5_000, 0, 0),
            (10, 0, 10, 8),
        ] {
            let b = Budget {
                context_window: w,
                reserved_output: r,
            };
            assert_eq!(b.input_budget(), input);
            assert_eq!(b.trim_target(0.8), target, "{w} {r}");
        }
        let b = Budget {
            context_window: 1000,
            reserved_output: 0,
        };
        assert_eq!(b.trim_target(1.5), 1000);
        assert_eq!(b.trim_target(-1.0), 0);
        assert_eq!(b.trim_target(f32::NAN), 1000);
    }
}
