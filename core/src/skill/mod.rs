//! Skills: SKILL.md parsing and matching.
