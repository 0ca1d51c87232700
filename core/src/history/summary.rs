//! The L3 block: the semantic summary of the turns that left the L2 ring (and the
//! optional tool-chain recap), injected as a user message followed by a short
//! assistant acknowledgement (tea-agent: "注入后加 assistant '好的，已了解...'").
//!
//! Producing the summary (a cheap-model call over the overflow of
//! [`super::L2Ring::push`] and the previous summary) is the shell's.

use alloc::string::String;

use super::message::Message;

/// First line of the injected block (tea-agent "[系统记忆 — 以下为需要遵循的有效信息和规则]").
pub const SUMMARY_HEADER: &str = "[System memory — information and rules still in force]";

/// Heading of the semantic summary (tea-agent "长期背景/偏好/关键结论").
pub const SUMMARY_SECTION: &str = "##### Long-term background / preferences / key conclusions";

/// Heading of the tool-chain recap (tea-agent "历史工具调用链回顾").
pub const TOOL_CHAIN_SECTION: &str = "##### Recent tool-call chain";

/// The assistant's acknowledgement after the block, keeping user/assistant alternation.
pub const SUMMARY_ACK: &str = "OK, understood. I will keep this in mind.";

/// First line of the block of what was selected for the new question (memories, skill
/// summaries, the open TODO items, the tool-chain review).
pub const CONTEXT_HEADER: &str =
    "[Context for the next message — selected for it, not written by the user]";

/// The assistant's acknowledgement after the context block.
pub const CONTEXT_ACK: &str = "Noted.";

/// The context block and its acknowledgement, or `None` when every block is empty
/// (after trimming whitespace). It goes after the history, right before the new
/// message: what changes from question to question sits after what a model server can
/// reuse from the previous request.
pub fn context_messages(blocks: &[&str]) -> Option<[Message; 2]> {
    let mut text = String::new();
    for block in blocks.iter().map(|b| b.trim()).filter(|b| !b.is_empty()) {
        text.push_str(if text.is_empty() { CONTEXT_HEADER } else { "" });
        text.push_str("\n\n");
        text.push_str(block);
    }
    (!text.is_empty()).then(|| [Message::user(text), Message::assistant(CONTEXT_ACK)])
}

/// The two L3 messages (block + acknowledgement), or `None` when both texts are
/// empty (after trimming whitespace).
pub fn summary_messages(semantic: &str, tool_chain: &str) -> Option<[Message; 2]> {
    let (semantic, tool_chain) = (semantic.trim(), tool_chain.trim());
    if semantic.is_empty() && tool_chain.is_empty() {
        return None;
    }
    let mut text = String::from(SUMMARY_HEADER);
    if !semantic.is_empty() {
        text.push_str("\n\n");
        text.push_str(SUMMARY_SECTION);
        text.push('\n');
        text.push_str(semantic);
    }
    if !tool_chain.is_empty() {
        text.push_str("\n\n---\n\n");
        text.push_str(TOOL_CHAIN_SECTION);
        text.push('\n');
        text.push_str(tool_chain);
    }
    Some([Message::user(text), Message::assistant(SUMMARY_ACK)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Role;
    use alloc::format;

    #[test]
    fn block_has_header_sections_and_ack() {
        let [block, ack] = summary_messages("likes tea", "ran tests").unwrap();
        assert_eq!(block.role, Role::User);
        assert_eq!(
            block.content,
            "[System memory — information and rules still in force]\n\n\
             ##### Long-term background / preferences / key conclusions\nlikes tea\n\n---\n\n\
             ##### Recent tool-call chain\nran tests"
        );
        assert_eq!(ack.role, Role::Assistant);
        assert_eq!(ack.content, SUMMARY_ACK);

        let [only, _] = summary_messages(" likes tea ", "").unwrap();
        assert!(only.content.ends_with("conclusions\nlikes tea"));
        assert!(summary_messages("  ", "\n").is_none());
    }

    #[test]
    fn context_block_joins_the_non_empty_blocks_under_its_header() {
        let [block, ack] = context_messages(&["skill: brew", "  ", "likes tea\n"]).unwrap();
        assert_eq!(block.role, Role::User);
        assert_eq!(
            block.content,
            format!("{CONTEXT_HEADER}\n\nskill: brew\n\nlikes tea")
        );
        assert_eq!(
            (ack.role, ack.content.as_str()),
            (Role::Assistant, CONTEXT_ACK)
        );
        assert!(context_messages(&[" ", "\n"]).is_none());
        assert!(context_messages(&[]).is_none());
    }
}
