//! The agents of one turn (DESIGN.md "One turn"): Manager, Memory, Tool, Evaluate and
//! Reflection. Filled in by the turn commit.
