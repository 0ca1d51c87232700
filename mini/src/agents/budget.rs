//! Whether the models may be asked for more today: `[model] daily_tokens` caps the
//! tokens (both models, prompt and completion) the turns of a local day use, as their
//! records count them. A turn that would start beyond it does not start, and says
//! what was used, the limit, and when it renews. A task's own `budget_tokens` is
//! checked by the scheduler before its run.

use evolve_core::Timestamp;

use super::runtime::Runtime;
use crate::error::Error;

/// `Ok` when today's tokens are below `[model] daily_tokens` (or there is no limit);
/// otherwise the error that stops the turn.
pub fn check_daily(rt: &Runtime, now: Timestamp) -> Result<(), Error> {
    let Some(limit) = rt.config.spending.daily_tokens else {
        return Ok(());
    };
    let used = rt.store.tokens_since(crate::store::today_start(now))?;
    if used < limit {
        return Ok(());
    }
    Err(Error::Budget {
        message: format!(
            "today's token budget is spent: {used} of {limit} tokens used \
             ([model] daily_tokens in config.toml); it renews at midnight, or raise the limit"
        ),
        used,
        limit,
        task: None,
    })
}
