//! Crystallization (tea-agent's 经验固化 "成功 → solidify"): a task that
//! took at least two successful tool calls and was graded at least
//! `[agent] crystallize_above` is written back as a learned skill in
//! `$EVOLVE_HOME/skills/<name>/SKILL.md`.
//!
//! What it decides: whether a turn qualifies ([`qualifies`]), whether a learned skill
//! already covers the same job ([`same_job`], checked before any model call), whether
//! the cheap model's draft is a usable skill ([`validate_draft`]), which name the skill
//! gets without overwriting any other skill ([`free_name`]) and the exact file written
//! ([`render`]: the draft's name, description, tags and body, plus `learned: true` and
//! the job fingerprint, which are ours, never the model's). What it leaves to others:
//! parsing SKILL.md (the core), loading and listing skills ([`crate::skills`]), removing
//! them (`evolve skills rm`).
//!
//! A skill drafted from a turn that read world text (a page, a file, a tool's output)
//! may carry what that text told the model to do, so it is not enabled: it is written
//! to `skills/.pending/<name>/` ([`PENDING_DIR`], which the loader skips), and waits
//! there until the person approves it (`evolve skills approve NAME`) or removes it.

use std::io::Write;
use std::path::Path;

use evolve_core::skill::{parse_skill_md, validate_name, SkillError, MAX_NAME_CHARS};
use evolve_core::text::{clip_chars, jaccard, one_line, KeywordSet, Tokenizer};

use super::memory::cheap_call_sized;
use super::memory::NEVER;
use super::prompts;
use super::runtime::Runtime;
use super::trace::{Outcome, ToolStep};
use crate::llm::Usage;
use crate::skills::{Catalog, LEARNED_KEY, MAX_SKILL_FILE_BYTES};

/// The folder under the skills folder where skills learned from turns with world text
/// wait for the person's review (hidden: the loader skips it).
pub const PENDING_DIR: &str = ".pending";

/// Successful tool calls a task needs before it is worth a skill: one call is a lookup,
/// not a method.
pub const MIN_TOOL_CALLS: usize = 2;
/// Two questions with the same tools whose keyword sets have at least this Jaccard
/// coefficient are the same job. Rephrasings of one request share most of their content
/// words (≥ 0.5 in the table below); different requests served by the same tools share
/// a few (≤ 0.3, the bar at which memory ingest already calls two texts the same).
pub const SAME_JOB_JACCARD: f32 = 0.5;
/// Front-matter key of the job's tools (sorted, distinct).
pub const JOB_TOOLS_KEY: &str = "job-tools";
/// Front-matter key of the question the skill was learned from.
pub const JOB_QUESTION_KEY: &str = "job-question";
/// Characters of the question kept in the fingerprint and shown to the model.
const QUESTION_CHARS: usize = 600;
/// Characters of the reply shown to the model.
const REPLY_CHARS: usize = 2_000;
/// Tool calls shown to the model, at most.
const STEPS_SHOWN: usize = 12;
/// The answer budget of a draft: about 40 lines of Markdown.
const DRAFT_MAX_TOKENS: u32 = 1_200;
/// A body shorter than this says nothing a description does not.
const BODY_MIN_CHARS: usize = 40;
/// A body longer than this is not the short method the prompt asked for.
const BODY_MAX_CHARS: usize = 8_000;
/// Other names tried (`name-2` … `name-9`) before a taken name makes us skip.
const NAME_TRIES: usize = 9;

/// A job: the distinct tools that worked (sorted) and the question's keywords.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Sorted, distinct tool names.
    pub tools: Vec<String>,
    /// Keywords of the question.
    pub keywords: KeywordSet,
}

impl Job {
    /// The job of a question solved with `tools` (any order, repeats allowed).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a str>, keywords: KeywordSet) -> Job {
        let mut tools: Vec<String> = tools.into_iter().map(str::to_string).collect();
        tools.sort();
        tools.dedup();
        Job { tools, keywords }
    }
}

/// Whether two jobs are the same: the same tools, and questions whose keywords overlap
/// at least [`SAME_JOB_JACCARD`]. The order and number of calls do not matter: the same
/// request may be solved in another order on another day.
pub fn same_job(a: &Job, b: &Job) -> bool {
    a.tools == b.tools && jaccard(a.keywords.as_slice(), b.keywords.as_slice()) >= SAME_JOB_JACCARD
}

/// Whether a turn is worth a skill: at least [`MIN_TOOL_CALLS`] calls that worked and a
/// score of at least `above`.
pub fn qualifies(steps: &[ToolStep], score: Option<f32>, above: f32) -> bool {
    let worked = steps
        .iter()
        .filter(|s| s.outcome == Outcome::Worked)
        .count();
    worked >= MIN_TOOL_CALLS && score.is_some_and(|s| s >= above)
}

/// A usable draft: the parts of the model's SKILL.md we keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// A valid skill name.
    pub name: String,
    /// One line starting with "Use when".
    pub description: String,
    /// Tags made of `a-z`, `0-9` and `-` only.
    pub tags: Vec<String>,
    /// The instructions.
    pub body: String,
}

/// Why a draft is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftProblem {
    /// The core's parser refused it.
    NotASkill(SkillError),
    /// The description does not say when to use the skill.
    NoUseWhen,
    /// The body is missing or too short to be a method.
    BodyTooShort,
    /// The body is longer than a skill of this kind should be.
    BodyTooLong,
}

impl std::fmt::Display for DraftProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DraftProblem::NotASkill(e) => write!(f, "it is not a SKILL.md: {e}"),
            DraftProblem::NoUseWhen => {
                write!(f, "its description does not start with \"Use when\"")
            }
            DraftProblem::BodyTooShort => {
                write!(f, "its body is shorter than {BODY_MIN_CHARS} characters")
            }
            DraftProblem::BodyTooLong => {
                write!(f, "its body is longer than {BODY_MAX_CHARS} characters")
            }
        }
    }
}

/// Checks the model's reply with the core's skill parser (after taking off a code
/// fence the model may have wrapped it in) and the rules of a learned skill: a
/// description that says when to use it, a body of reasonable length. Tags that would
/// not survive being written back are dropped.
pub fn validate_draft(reply: &str) -> Result<Draft, DraftProblem> {
    let text = unfence(reply);
    let doc = parse_skill_md(text).map_err(DraftProblem::NotASkill)?;
    let description = one_line(&doc.description, evolve_core::skill::MAX_DESCRIPTION_CHARS);
    if !description
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("use when"))
    {
        return Err(DraftProblem::NoUseWhen);
    }
    let body = doc.body.trim();
    let chars = body.chars().count();
    if chars < BODY_MIN_CHARS {
        return Err(DraftProblem::BodyTooShort);
    }
    if chars > BODY_MAX_CHARS {
        return Err(DraftProblem::BodyTooLong);
    }
    let tags = doc
        .tags
        .iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| validate_name(t).is_ok())
        .take(5)
        .collect();
    Ok(Draft {
        name: doc.name,
        description,
        tags,
        body: format!("{body}\n"),
    })
}

/// The reply without a surrounding ```` ``` ```` fence and blank edges.
fn unfence(reply: &str) -> &str {
    let t = reply.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    // Drop the fence line (```markdown) and a closing fence.
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// `wanted`, or `wanted-2` … `wanted-9` (shortened to fit [`MAX_NAME_CHARS`]): the
/// first name not `taken`. `None` when all are taken: a skill is never overwritten.
pub fn free_name(wanted: &str, taken: &dyn Fn(&str) -> bool) -> Option<String> {
    if !taken(wanted) {
        return Some(wanted.to_string());
    }
    (2..=NAME_TRIES).find_map(|n| {
        let suffix = format!("-{n}");
        let keep = MAX_NAME_CHARS - suffix.len();
        let stem: String = wanted.chars().take(keep).collect();
        let name = format!("{}{suffix}", stem.trim_end_matches('-'));
        (validate_name(&name).is_ok() && !taken(&name)).then_some(name)
    })
}

/// The SKILL.md written for a draft: its name, description and tags, `learned: true`
/// and the job fingerprint (tools, question), then its body. Values are written so the
/// core's parser reads them back unchanged (the description as a folded block, so no
/// character of it can end the value early).
pub fn render(draft: &Draft, name: &str, job_tools: &[String], question: &str) -> String {
    let mut text = String::from("---\n");
    text.push_str(&format!("name: {name}\n"));
    text.push_str(&format!("description: >\n  {}\n", draft.description));
    if !draft.tags.is_empty() {
        text.push_str(&format!("tags: [{}]\n", draft.tags.join(", ")));
    }
    text.push_str(&format!("{LEARNED_KEY}: true\n"));
    text.push_str(&format!("{JOB_TOOLS_KEY}:\n"));
    for tool in job_tools {
        text.push_str(&format!("  - {}\n", one_line(tool, 200)));
    }
    text.push_str(&format!(
        "{JOB_QUESTION_KEY}: >\n  {}\n",
        one_line(question, QUESTION_CHARS)
    ));
    text.push_str("---\n");
    text.push_str(&draft.body);
    text
}

/// The jobs of the learned skills in `dir` (those with a `job-tools` fingerprint).
/// Unreadable or broken folders are skipped: the loader warns about them.
pub fn learned_jobs(dir: &Path, tokenizer: &dyn Tokenizer) -> Vec<(String, Job)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut jobs = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let file = entry.path().join("SKILL.md");
        let small = std::fs::metadata(&file).is_ok_and(|m| m.len() <= MAX_SKILL_FILE_BYTES);
        let Some(doc) = small
            .then(|| std::fs::read_to_string(&file).ok())
            .flatten()
            .and_then(|t| parse_skill_md(&t).ok())
        else {
            continue;
        };
        let value = |key: &str| {
            doc.extra
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let Some(tools) = value(JOB_TOOLS_KEY) else {
            continue;
        };
        let question = value(JOB_QUESTION_KEY).unwrap_or_default();
        let job = Job::new(
            tools.split(", ").map(str::trim).filter(|t| !t.is_empty()),
            KeywordSet::of(tokenizer, &question),
        );
        jobs.push((doc.name, job));
    }
    jobs
}

/// Writes `text` as `root/name/SKILL.md` all at once: into a hidden folder first (the
/// loader skips folders starting with `.`), then renamed into place, which fails rather
/// than replace a skill folder that appeared meanwhile.
pub fn write_skill(root: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    // Unique per process and call: two workers (serve runs one per manager) never share it.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = root.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let written = std::fs::create_dir(&tmp).and_then(|()| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp.join("SKILL.md"))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    let target = root.join(name);
    let placed = written.and_then(|()| {
        if std::fs::symlink_metadata(&target).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists", target.display()),
            ));
        }
        std::fs::rename(&tmp, &target)
    });
    if placed.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    placed
}

/// What crystallization made of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Crystallized {
    /// A learned skill, enabled: the agent uses it from the next turn.
    Enabled(String),
    /// A skill drafted from a task that read world text: it waits in [`PENDING_DIR`]
    /// for the person's review (`evolve skills approve NAME`).
    Pending(String),
}

/// The crystallization agent's work after a turn: the new skill, or `None` (not
/// qualified, the job already has a skill, an unusable draft — noted in `problems` —
/// or no free name). `world`: the turn read world text, so the skill waits in
/// [`PENDING_DIR`] for the person's review instead of being enabled.
#[allow(clippy::too_many_arguments)]
pub fn crystallize(
    rt: &Runtime,
    question: &str,
    reply: &str,
    steps: &[ToolStep],
    score: Option<f32>,
    world: bool,
    usage: &mut Usage,
    problems: &mut Vec<String>,
) -> Option<Crystallized> {
    if !qualifies(steps, score, rt.config.agent.crystallize_above) {
        return None;
    }
    let worked: Vec<&ToolStep> = steps
        .iter()
        .filter(|s| s.outcome == Outcome::Worked)
        .collect();
    let job = Job::new(
        worked.iter().map(|s| s.name.as_str()),
        KeywordSet::of(&rt.tokenizer, question),
    );
    let root = rt.config.skills_dir();
    let pending = root.join(PENDING_DIR);
    let mut known = learned_jobs(&root, &rt.tokenizer);
    known.extend(learned_jobs(&pending, &rt.tokenizer));
    if let Some((name, _)) = known.into_iter().find(|(_, j)| same_job(j, &job)) {
        log::info!("this job already has the learned skill {name}; no new skill");
        return None;
    }
    let mut input = format!(
        "User's request:\n{}\n\nTool calls that worked, in order:\n",
        clip_chars(question, QUESTION_CHARS)
    );
    for s in worked.iter().take(STEPS_SHOWN) {
        input.push_str(&s.line());
        input.push('\n');
    }
    input.push_str(&format!(
        "\nThe assistant's reply:\n{}",
        clip_chars(reply, REPLY_CHARS)
    ));
    let text = cheap_call_sized(
        rt,
        prompts::CRYSTALLIZE,
        &input,
        DRAFT_MAX_TOKENS,
        usage,
        problems,
        &NEVER,
    )?;
    let draft = match validate_draft(&text) {
        Ok(d) => d,
        Err(e) => {
            super::note(
                problems,
                format!(
                    "crystallize: the model's draft is not a usable skill ({e}); no skill saved"
                ),
            );
            return None;
        }
    };
    // Bundled, user and learned skills, and any folder (even a broken one) keep their
    // names.
    let catalog = Catalog::load(&root, &rt.tokenizer);
    let taken = |n: &str| {
        catalog.get(n).is_some()
            || std::fs::symlink_metadata(root.join(n)).is_ok()
            || std::fs::symlink_metadata(pending.join(n)).is_ok()
    };
    let Some(name) = free_name(&draft.name, &taken) else {
        super::note(
            problems,
            format!(
                "crystallize: the names {0} and {0}-2 … {0}-{NAME_TRIES} are all taken; no skill saved",
                draft.name
            ),
        );
        return None;
    };
    let text = render(&draft, &name, &job.tools, question);
    // What we write must load, or the user gets a skill the agent skips.
    if let Err(e) = parse_skill_md(&text) {
        super::note(
            problems,
            format!("crystallize: the skill {name} would not load ({e}); no skill saved"),
        );
        return None;
    }
    // A skill is a plain file meant to be read and shared: a credential the user pasted
    // into the question, or the model echoed into the draft, stays out of it.
    if let Some(kind) = evolve_core::permission::find_secret(&text) {
        super::note(
            problems,
            format!(
                "crystallize: the skill {name} would hold something shaped like a credential \
                 ({kind:?}); no skill saved"
            ),
        );
        return None;
    }
    let folder = if world { &pending } else { &root };
    if let Err(e) = write_skill(folder, &name, &text) {
        super::note(
            problems,
            format!(
                "crystallize: cannot write {}: {e} — check that the folder is writable",
                folder.join(&name).join("SKILL.md").display()
            ),
        );
        return None;
    }
    if world {
        log::info!(
            "drafted the skill {name} from a task that read outside text; it waits for \
             review: `evolve skills show {name}`, then `evolve skills approve {name}`"
        );
        return Some(Crystallized::Pending(name));
    }
    rt.skills.reload(&root, &rt.tokenizer);
    log::info!("learned the skill {name} from this task");
    Some(Crystallized::Enabled(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::TempDir;
    use evolve_core::text::FallbackTokenizer;

    fn job(tools: &[&str], question: &str) -> Job {
        Job::new(
            tools.iter().copied(),
            KeywordSet::of(&FallbackTokenizer, question),
        )
    }

    #[test]
    fn same_job_needs_the_same_tools_and_a_similar_question() {
        let base = job(
            &["list_dir", "read_file"],
            "list the workspace files and read the release notes",
        );
        let table: &[(&[&str], &str, bool)] = &[
            // Same request, same tools (order and repeats do not matter).
            (
                &["read_file", "list_dir", "read_file"],
                "list the workspace files and read the release notes",
                true,
            ),
            // A rephrasing.
            (
                &["list_dir", "read_file"],
                "please list workspace files and read release notes",
                true,
            ),
            // Same question, other tools.
            (
                &["list_dir", "get_time"],
                "list the workspace files and read the release notes",
                false,
            ),
            // A tool more.
            (
                &["list_dir", "read_file", "get_time"],
                "list the workspace files and read the release notes",
                false,
            ),
            // Same tools, another request.
            (
                &["list_dir", "read_file"],
                "find the invoice from march and total it",
                false,
            ),
            (&["list_dir", "read_file"], "", false),
        ];
        for (tools, question, same) in table {
            assert_eq!(
                same_job(&base, &job(tools, question)),
                *same,
                "{tools:?} {question:?}"
            );
        }
    }

    fn step(name: &str, outcome: Outcome) -> ToolStep {
        ToolStep {
            name: name.into(),
            arguments: "{}".into(),
            outcome,
            result_head: String::new(),
        }
    }

    #[test]
    fn a_turn_qualifies_with_two_working_calls_and_a_high_score() {
        use Outcome::*;
        let table: &[(&[Outcome], Option<f32>, bool)] = &[
            (&[Worked, Worked], Some(0.9), true),
            (&[Worked, Worked], Some(0.8), true),
            (&[Worked, Worked], Some(0.79), false),
            (&[Worked, Worked], None, false),
            (&[Worked], Some(1.0), false),
            (&[Worked, Failed], Some(0.9), false),
            (&[Worked, Refused, Worked], Some(0.9), true),
            (&[], Some(1.0), false),
        ];
        for (outcomes, score, want) in table {
            let steps: Vec<ToolStep> = outcomes.iter().map(|o| step("t", *o)).collect();
            assert_eq!(
                qualifies(&steps, *score, 0.8),
                *want,
                "{outcomes:?} {score:?}"
            );
        }
    }

    const GOOD: &str = "---\nname: release-notes-digest\ndescription: Use when the user wants the release notes of the workspace summarised.\ntags: [Docs, release notes, files]\n---\n# Steps\n1. list_dir the workspace.\n2. read_file each notes file.\n3. Summarise in bullets.\n";

    #[test]
    fn drafts_are_validated() {
        let d = validate_draft(GOOD).expect("valid");
        assert_eq!(d.name, "release-notes-digest");
        assert!(d.description.starts_with("Use when"));
        assert_eq!(d.tags, ["docs", "files"], "a tag with a space is dropped");
        assert!(d.body.starts_with("# Steps"));
        let fenced = format!("```markdown\n{GOOD}```\n");
        assert_eq!(validate_draft(&fenced), Ok(d));

        type Check = fn(&DraftProblem) -> bool;
        let bad: &[(&str, Check)] = &[
            ("Sure! Here is a skill.", |p| {
                matches!(p, DraftProblem::NotASkill(_))
            }),
            ("", |p| matches!(p, DraftProblem::NotASkill(_))),
            ("{\"name\": \"x\"}", |p| matches!(p, DraftProblem::NotASkill(_))),
            (
                "---\nname: Bad_Name\ndescription: Use when x\n---\nbody body body body body body body body body\n",
                |p| matches!(p, DraftProblem::NotASkill(_)),
            ),
            (
                "---\nname: ok-name\ndescription: Summarises notes\n---\nbody body body body body body body body body\n",
                |p| *p == DraftProblem::NoUseWhen,
            ),
            ("---\nname: ok-name\ndescription: Use when x\n---\nshort\n", |p| {
                *p == DraftProblem::BodyTooShort
            }),
            ("---\nname: ok-name\ndescription: Use when x\n", |p| {
                matches!(p, DraftProblem::NotASkill(_))
            }),
        ];
        for (text, is) in bad {
            let got = validate_draft(text);
            assert!(got.as_ref().is_err_and(is), "{text:?}: {got:?}");
        }
        let long = format!(
            "---\nname: ok-name\ndescription: Use when x\n---\n{}\n",
            "word ".repeat(BODY_MAX_CHARS)
        );
        assert_eq!(validate_draft(&long), Err(DraftProblem::BodyTooLong));
    }

    #[test]
    fn free_names_never_take_an_existing_one() {
        let taken = |set: &'static [&'static str]| move |n: &str| set.contains(&n);
        assert_eq!(free_name("a-b", &taken(&[])).as_deref(), Some("a-b"));
        assert_eq!(free_name("a-b", &taken(&["a-b"])).as_deref(), Some("a-b-2"));
        assert_eq!(
            free_name("a-b", &taken(&["a-b", "a-b-2", "a-b-3"])).as_deref(),
            Some("a-b-4")
        );
        let all: &'static [&'static str] =
            &["x", "x-2", "x-3", "x-4", "x-5", "x-6", "x-7", "x-8", "x-9"];
        assert_eq!(free_name("x", &taken(all)), None);
        let long = "a".repeat(MAX_NAME_CHARS);
        let leaked: &'static str = Box::leak(long.clone().into_boxed_str());
        let got = free_name(&long, &move |n: &str| n == leaked).expect("a shorter name");
        assert_eq!(got.chars().count(), MAX_NAME_CHARS);
        assert!(got.ends_with("-2") && validate_name(&got).is_ok());
    }

    #[test]
    fn rendered_skills_load_as_learned_with_their_fingerprint() {
        let draft = validate_draft(GOOD).unwrap();
        let tools = vec!["list_dir".to_string(), "read_file".to_string()];
        let question = "Read the release notes: #1 \"quoted\" — key: value\nsecond line";
        let text = render(&draft, "release-notes-digest-2", &tools, question);
        let doc = parse_skill_md(&text).expect("renders a valid SKILL.md");
        assert_eq!(doc.name, "release-notes-digest-2");
        assert_eq!(doc.description, draft.description);
        assert_eq!(doc.body, draft.body);

        let tmp = TempDir::new("crystallize");
        write_skill(tmp.path(), "release-notes-digest-2", &text).unwrap();
        let err = write_skill(tmp.path(), "release-notes-digest-2", &text);
        assert!(err.is_err(), "an existing skill is never replaced");
        let jobs = learned_jobs(tmp.path(), &FallbackTokenizer);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].1.tools, tools);
        assert!(same_job(
            &jobs[0].1,
            &job(&["read_file", "list_dir"], question)
        ));
        let catalog = Catalog::load(tmp.path(), &FallbackTokenizer);
        let skill = catalog.get("release-notes-digest-2").expect("loaded");
        assert_eq!(skill.source, crate::skills::Source::Learned);
        let hidden: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "no temporary folder is left behind");
    }
}
