//! Which earlier turns of a session go to the model whole (L1), and which of them keep
//! their tool outputs, for the turn numbered `turn` (from 1).
//!
//! Both move in steps of `step` turns, at the same turns, rather than one turn at a
//! time: a request then repeats the previous one as its prefix (a model server's prompt
//! cache reuses it) on every turn but the few where the window moves. Between moves the
//! window grows by one turn a turn: L1 holds at least `min_turns` turns (the current one
//! included) once the session has that many, and fewer than `min_turns + step`.

/// Where L1 starts and which of its turns keep their tool outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first turn sent whole (1 while the session is short); earlier turns are
    /// left to L2.
    pub first_turn: u64,
    /// Turns before this one show placeholders instead of their tool outputs.
    pub outputs_from: u64,
}

/// The window of turn `turn`: L1 holds `min_turns` (6 by default) to
/// `min_turns + step − 1` turns, the current one included, and moves by `step` (3)
/// turns at a time; at each move the tool outputs of its first `min_turns − step`
/// turns become placeholders, so every turn keeps those of its last `step` turns at
/// least (of all its turns while L1 is shorter). A `step` of 0 acts as 1, a
/// `min_turns` of 0 as 1.
pub fn window(turn: u64, min_turns: u64, step: u64) -> Window {
    let (min, step) = (min_turns.max(1), step.max(1));
    let turn = turn.max(1);
    if turn < min + step {
        // Nothing has left yet: every turn whole, with its outputs.
        return Window {
            first_turn: 1,
            outputs_from: 1,
        };
    }
    let moves = (turn - min) / step;
    let first_turn = 1 + moves * step;
    Window {
        first_turn,
        outputs_from: first_turn + min.saturating_sub(step),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_moves_in_steps_and_keeps_the_last_outputs() {
        // (turn, first turn whole, first turn with outputs) for min 6, step 3.
        let table = [
            (1, 1, 1),
            (5, 1, 1),
            (8, 1, 1),
            (9, 4, 7),
            (10, 4, 7),
            (11, 4, 7),
            (12, 7, 10),
            (14, 7, 10),
            (15, 10, 13),
            (100, 94, 97),
        ];
        for (turn, first, outputs) in table {
            assert_eq!(
                window(turn, 6, 3),
                Window {
                    first_turn: first,
                    outputs_from: outputs
                },
                "turn {turn}"
            );
        }
    }

    #[test]
    fn l1_stays_between_its_bounds_and_moves_only_every_step_turns() {
        for (min, step) in [(6, 3), (1, 1), (4, 2), (2, 5)] {
            let mut moves = 0;
            for turn in 1..200u64 {
                let w = window(turn, min, step);
                let whole = turn - w.first_turn + 1;
                assert!(whole < min + step, "turn {turn}: {whole} turns");
                if turn >= min {
                    assert!(whole >= min, "turn {turn}: {whole} turns");
                }
                assert!(w.outputs_from >= w.first_turn && w.outputs_from <= turn);
                let kept = turn - w.outputs_from + 1;
                assert!(kept >= step.min(whole), "turn {turn}: outputs of {kept}");
                let before = window(turn - 1, min, step);
                if turn > 1 && before != w {
                    moves += 1;
                    assert_eq!(w.first_turn - before.first_turn, step, "turn {turn}");
                }
            }
            assert!(moves <= 200 / step, "{min}/{step}: {moves} moves");
        }
    }

    #[test]
    fn zero_bounds_act_as_one() {
        assert_eq!(window(5, 0, 0), window(5, 1, 1));
        assert_eq!(window(0, 6, 3), window(1, 6, 3));
    }
}
